//! The TCP side: a listener, a reader thread per connection (one queue)
//! running its [`Session`], a writer thread per connection that sends each
//! answer when its pacing time comes, keep-alive expiry, and the signals
//! (statistics on SIGUSR1, a clean stop on SIGINT or SIGTERM).

use crate::nvme_tcp::pdu::ReadError;
use crate::nvme_tcp::session::{Output, Session};
use crate::nvme_tcp::target::{lock, Target};
use crate::stats_file::{write_stats, StatsFile};
use crate::ServeError;
use signal_hook::consts::{SIGINT, SIGTERM, SIGUSR1};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{BufReader, Write as _};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use zonelab_sim::Nanos;

/// Outputs queued between a connection's reader and writer.
const OUTPUTS_QUEUED_MAX: usize = 1024;
/// Connections open at once (queues of all controllers).
const CONNECTIONS_MAX: usize = 1024;

/// Settings of `zonelab serve --nvme-tcp`.
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
    std::thread::spawn(move || accept_loop(&listener, &accept_target, true));
    let pace = lock(&target.namespaces[0]).pace();
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
            continue;
        }
        break;
    }
    target.close_connections();
    write_stats(&stats, &target.stats_report());
    target.sync_images()
}

/// Accepts connections, each served on its own thread (see [`serve_connection`]).
pub fn accept_loop(listener: &TcpListener, target: &Arc<Target>, stop_on_failure: bool) {
    for (id, stream) in (0u64..).zip(listener.incoming()) {
        let Ok(stream) = stream else { continue };
        if lock_connections_full(target) {
            let _ = stream.shutdown(Shutdown::Both);
            continue;
        }
        let target = Arc::clone(target);
        std::thread::spawn(move || serve_connection(&target, id, stream, stop_on_failure));
    }
}

fn lock_connections_full(target: &Target) -> bool {
    target.connection_count() >= CONNECTIONS_MAX
}

/// Serves one connection until the host closes it or a fatal error.
/// `stop_on_failure`: a model failure stops the server (SIGTERM to itself)
/// rather than answer Internal Error forever, as for ublk.
pub fn serve_connection(target: &Arc<Target>, id: u64, stream: TcpStream, stop_on_failure: bool) {
    let (Ok(local), Ok(writer_stream), Ok(registered)) = (stream.local_addr(), stream.try_clone(), stream.try_clone())
    else {
        return;
    };
    let _ = stream.set_nodelay(true);
    target.add_connection(id, registered);
    let (tx, rx) = sync_channel::<Output>(OUTPUTS_QUEUED_MAX);
    let writer_target = Arc::clone(target);
    let writer = std::thread::spawn(move || write_loop(writer_stream, &rx, &writer_target));
    let mut session = Session::new(Arc::clone(target), local);
    let mut reader = BufReader::with_capacity(256 << 10, &stream);
    let mut outputs = Vec::new();
    let mut keep_alive_set = false;
    loop {
        let result = session.step(&mut reader, &mut outputs);
        let sent = outputs.drain(..).try_for_each(|o| tx.send(o));
        if stop_on_failure && target.failed() {
            eprintln!("zonelab: the device model failed; stopping");
            let _ = signal_hook::low_level::raise(SIGTERM);
            break;
        }
        if !keep_alive_set {
            keep_alive_set = arm_keep_alive(&session, &stream, id);
        }
        match result {
            Ok(true) if sent.is_ok() => {}
            Ok(_) => break,
            Err(ReadError::Closed(e)) => {
                if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) {
                    eprintln!("zonelab: keep alive timeout; closing the controller's queues");
                }
                break;
            }
            Err(ReadError::Fatal(e)) => {
                eprintln!("zonelab: fatal NVMe/TCP error from the host: {} (FES {:?}); closing", e.reason, e.fes);
                break;
            }
        }
    }
    // The controller goes before the host can see the connection close.
    match session.binding() {
        Some((controller, 0)) => target.remove_controller(controller.cntlid),
        Some((controller, _)) => drop(lock(&controller.state).io_streams.remove(&id)),
        None => {}
    }
    drop(tx);
    let _ = writer.join();
    let _ = stream.shutdown(Shutdown::Both);
    target.remove_connection(id);
}

/// Once the queue is connected: an admin queue with a keep-alive timeout
/// gets it as its read timeout (twice KATO: hosts send every KATO / 2); an
/// I/O queue is registered to close with its controller. True once done.
fn arm_keep_alive(session: &Session, stream: &TcpStream, id: u64) -> bool {
    let Some((controller, qid)) = session.binding() else { return false };
    if qid == 0 {
        let kato_ms = lock(&controller.state).kato_ms;
        if kato_ms > 0 {
            let _ = stream.set_read_timeout(Some(Duration::from_millis(u64::from(kato_ms) * 2)));
        }
    } else if let Ok(clone) = stream.try_clone() {
        lock(&controller.state).io_streams.insert(id, clone);
    }
    true
}

/// Sends outputs in due order (then arrival order) when the wall clock
/// reaches them; after the reader is done, sends what is left at once.
fn write_loop(mut stream: TcpStream, rx: &Receiver<Output>, target: &Target) {
    let mut queue: BinaryHeap<Reverse<(Nanos, u64, Vec<u8>)>> = BinaryHeap::new();
    let mut arrivals = 0u64;
    let mut open = true;
    while open || !queue.is_empty() {
        let now_ns = target.wall_ns();
        while let Some(Reverse((due_ns, _, _))) = queue.peek() {
            if open && *due_ns > now_ns {
                break;
            }
            let Reverse((_, _, bytes)) = queue.pop().expect("peeked");
            if stream.write_all(&bytes).is_err() {
                return;
            }
        }
        if !open {
            continue;
        }
        let wait = queue.peek().map(|Reverse((due_ns, _, _))| Duration::from_nanos(due_ns.saturating_sub(now_ns)));
        let received = match wait {
            Some(wait) => rx.recv_timeout(wait),
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match received {
            Ok(output) => {
                arrivals += 1;
                queue.push(Reverse((output.due_ns, arrivals, output.bytes)));
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => open = false,
        }
    }
    let _ = stream.flush();
}
