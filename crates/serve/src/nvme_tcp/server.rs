//! The TCP side: a listener admitting connections within the cap, a reader
//! thread per connection running its [`Session`], a writer thread per
//! connection that sends each answer when its pacing time comes, a reaper
//! thread for the timeouts (ICReq, Connect, keep-alive) and memory
//! starvation, and the signals (statistics on SIGUSR1, a clean stop on
//! SIGINT or SIGTERM). Threads: two per connection, so the connection cap
//! bounds them.

use crate::nvme_tcp::connection::Connection;
use crate::nvme_tcp::pdu::ReadError;
use crate::nvme_tcp::session::{Output, Session};
use crate::nvme_tcp::target::{lock, Target, QUEUE_ENTRIES_MAX};
use crate::stats_file::{write_stats, StatsFile};
use crate::ServeError;
use signal_hook::consts::{SIGINT, SIGTERM, SIGUSR1};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write as _};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use zonelab_sim::Nanos;

/// Outputs queued between a connection's reader and writer: a response and
/// an R2T per command of the largest queue, and a termination request.
const OUTPUTS_QUEUED_MAX: usize = 2 * QUEUE_ENTRIES_MAX as usize + 2;
/// A connection's read buffer (within [`crate::nvme_tcp::limits::CONNECTION_FIXED_BYTES`]).
const READ_BUFFER_BYTES: usize = 32 << 10;
/// How often the reaper looks at timeouts and memory.
const REAP_INTERVAL: Duration = Duration::from_millis(50);
/// How often a reader with deferred R2Ts looks for freed memory.
const DEFERRED_POLL: Duration = Duration::from_millis(20);
/// After a failed accept (out of file descriptors...), wait before the next.
const ACCEPT_RETRY: Duration = Duration::from_millis(20);

/// Settings of `zonelab serve --nvme-tcp` (the limits are the [`Target`]'s).
#[derive(Debug, Clone)]
pub struct NvmeTcpOptions {
    /// Address and port to listen on (4420 is NVMe/TCP's).
    pub listen: SocketAddr,
    /// Where to write statistics (on SIGUSR1 and on exit); stderr when absent.
    pub stats_path: Option<PathBuf>,
}

/// Serves `target` on `options.listen` until SIGINT or SIGTERM, then
/// closes every connection, writes the statistics and syncs the images.
pub fn serve_nvme_tcp(target: Target, options: NvmeTcpOptions) -> Result<(), ServeError> {
    let stats_file = options.stats_path.as_deref().map(StatsFile::create).transpose()?;
    let listener =
        TcpListener::bind(options.listen).map_err(|source| ServeError::Listen { address: options.listen, source })?;
    let address = listener.local_addr().map_err(ServeError::ListeningSocket)?;
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGUSR1]).map_err(ServeError::Signals)?;
    let target = Arc::new(target);
    let accept_target = Arc::clone(&target);
    std::thread::spawn(move || accept_loop(&listener, &accept_target));
    let pace = target.pace();
    println!(
        "zonelab: serving {} on nvme-tcp {address} ({} namespace(s), pace {}); \
         SIGUSR1 prints statistics, SIGINT or SIGTERM stops",
        target.subnqn,
        target.namespace_count(),
        if pace == crate::Pace::Realtime { "realtime" } else { "asap" }
    );
    let _ = std::io::stdout().flush();
    let stats = Mutex::new(stats_file);
    for signal in signals.forever() {
        if signal == SIGUSR1 {
            write_stats(&stats, &target.stats_report());
            target.flush_recording();
            continue;
        }
        break;
    }
    target.close_connections();
    write_stats(&stats, &target.stats_report());
    target.flush_recording();
    let memory = target.memory();
    eprintln!("zonelab: nvme-tcp memory budget: peak {} of {} bytes", memory.peak(), memory.limit());
    target.sync_images()
}

/// Accepts connections within the cap, each served on its own thread (see
/// [`serve_connection`]), and runs the reaper.
pub fn accept_loop(listener: &TcpListener, target: &Arc<Target>) {
    let reaper_target = Arc::clone(target);
    let reaper = std::thread::Builder::new().name("nvmetcp-reaper".into()).spawn(move || reap_loop(&reaper_target));
    if let Err(e) = reaper {
        eprintln!("zonelab: cannot start the nvme-tcp reaper thread: {e}; not serving");
        return;
    }
    for stream in listener.incoming() {
        if target.stopping() {
            break;
        }
        let stream = match stream {
            Ok(stream) => stream,
            Err(_) => {
                std::thread::sleep(ACCEPT_RETRY);
                continue;
            }
        };
        let connection = match target.admit(stream) {
            Ok(connection) => connection,
            Err(refused) => {
                let _ = refused.shutdown(Shutdown::Both);
                continue;
            }
        };
        let (t, c) = (Arc::clone(target), Arc::clone(&connection));
        let spawned = std::thread::Builder::new().spawn(move || serve_connection(&t, &c));
        if let Err(e) = spawned {
            target.log(format_args!("cannot start a connection thread: {e}"));
            connection.close();
            target.remove_connection(connection.id);
        }
    }
}

fn reap_loop(target: &Target) {
    while !target.stopping() {
        std::thread::sleep(REAP_INTERVAL);
        target.reap();
    }
}

/// Serves one admitted connection until the host closes it, a fatal error
/// or the server closes it; then forgets it.
pub fn serve_connection(target: &Arc<Target>, connection: &Arc<Connection>) {
    let (tx, rx) = sync_channel::<Output>(OUTPUTS_QUEUED_MAX);
    let local = connection.stream().and_then(|s| s.local_addr().ok());
    let writer = local.and_then(|local| {
        let (t, c) = (Arc::clone(target), Arc::clone(connection));
        let writer = std::thread::Builder::new().spawn(move || write_loop(&rx, &t, &c));
        writer.ok().map(|w| (local, w))
    });
    if let (Some((local, writer)), Some(stream)) = (writer, connection.stream()) {
        let _ = stream.set_nodelay(true);
        let mut session = Session::with_connection(Arc::clone(target), Arc::clone(connection), local);
        connection.set_sink(Some(tx.clone()));
        read_loop(target, &mut session, stream, &tx);
        // The writer ends when every sender is gone.
        connection.set_sink(None);
        // The controller goes before the host can see the connection close.
        match session.binding() {
            Some((controller, 0)) => target.remove_controller_of(&controller),
            Some((controller, _)) => drop(lock(&controller.state).queues.remove(&connection.id)),
            None => {}
        }
        drop(tx);
        let _ = writer.join();
    }
    connection.close();
    target.remove_connection(connection.id);
}

fn read_loop(target: &Target, session: &mut Session, stream: &TcpStream, tx: &SyncSender<Output>) {
    let mut reader = BufReader::with_capacity(READ_BUFFER_BYTES, stream);
    let mut outputs = Vec::new();
    loop {
        if session.has_deferred() && !wait_for_data(session, &mut reader, stream, tx) {
            break;
        }
        let result = session.step(&mut reader, &mut outputs);
        let sent = outputs.drain(..).try_for_each(|o| tx.send(o));
        match result {
            Ok(true) if sent.is_ok() => {}
            Ok(_) | Err(ReadError::Closed(_)) => break,
            Err(ReadError::Fatal(e)) => {
                let _ = sent;
                target.log(format_args!("fatal NVMe/TCP error from a host: {} (FES {:?}); closing", e.reason, e.fes));
                break;
            }
        }
    }
}

/// With R2Ts waiting for memory, waits for the host's next bytes in short
/// slices, sending the R2Ts that memory freed meanwhile (by this
/// connection's writer or by others) allows: the host may be waiting for
/// them. False when the connection is going away.
fn wait_for_data(
    session: &mut Session,
    reader: &mut BufReader<&TcpStream>,
    stream: &TcpStream,
    tx: &SyncSender<Output>,
) -> bool {
    let _ = stream.set_read_timeout(Some(DEFERRED_POLL));
    let mut outputs = Vec::new();
    let ready = loop {
        match reader.fill_buf() {
            Ok(_) => break true,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                session.grant_deferred(&mut outputs);
                if outputs.drain(..).try_for_each(|o| tx.send(o)).is_err() {
                    break false;
                }
                if !session.has_deferred() {
                    break true;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break true, // the step reports it
        }
    };
    let _ = stream.set_read_timeout(None);
    ready
}

/// Sends outputs in due order (then arrival order) when the wall clock
/// reaches them; after the reader is done, sends what is left at once. A
/// failed write closes the connection.
fn write_loop(rx: &Receiver<Output>, target: &Target, connection: &Connection) {
    let Some(mut stream) = connection.stream() else { return };
    let mut queue: BTreeMap<(Nanos, u64), Output> = BTreeMap::new();
    let mut arrivals = 0u64;
    let mut open = true;
    while open || !queue.is_empty() {
        let now_ns = target.wall_ns();
        while let Some(entry) = queue.first_entry() {
            if open && entry.key().0 > now_ns {
                break;
            }
            let output = entry.remove();
            let closes = output.closes;
            // After a termination request the connection ends: the answers
            // still queued are dropped (NVMe/TCP 1.0, §3.6.2.2).
            if !send(&mut stream, output, target, connection) || closes {
                let _ = stream.flush();
                connection.close();
                return;
            }
        }
        if !open {
            continue;
        }
        let wait = queue.first_key_value().map(|((due_ns, _), _)| Duration::from_nanos(due_ns.saturating_sub(now_ns)));
        let received = match wait {
            Some(wait) => rx.recv_timeout(wait),
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match received {
            Ok(output) => {
                arrivals += 1;
                queue.insert((output.due_ns, arrivals), output);
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => open = false,
        }
    }
    let _ = stream.flush();
}

/// Writes one output; its memory is given back once written (or failed).
fn send(stream: &mut &TcpStream, output: Output, target: &Target, connection: &Connection) -> bool {
    // Counted as answered before the write: the host may answer the
    // response with a new command before this thread runs again.
    if output.completes {
        connection.outstanding.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        connection.note_sent(output.seq);
    }
    connection.set_writing(Some(target.wall_ns()));
    let written = stream.write_all(&output.bytes).is_ok();
    connection.set_writing(None);
    written
}
