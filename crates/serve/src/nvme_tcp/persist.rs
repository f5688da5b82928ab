//! Namespaces across restarts (`serve --nvme-tcp --backing FILE`): what
//! Namespace Management and Attachment made of the drive lasts, as a drive's
//! namespaces last across power cycles.
//!
//! FILE.namespaces lists the allocated namespaces, one line each, after a
//! header line `zonelab-namespaces 1`: `NSID config attached|detached` for a
//! namespace of the configuration, `NSID created attached|detached nvm|zoned
//! LBA_BYTES NSZE NCAP` for one Namespace Management made. Namespace N keeps
//! its image where the configuration's would be (FILE, FILE.nsN). The list
//! is replaced whole (a new file renamed over it) after every change; a
//! deleted namespace's image is removed after the list no longer names it.
//! A configuration namespace the list does not name was deleted.

use crate::error::ImageError;
use crate::ServeError;
use std::io::Write;
use std::path::{Path, PathBuf};
use zonelab_device::config::namespaces::{CommandSet, NamespaceRequest};
use zonelab_device::NAMESPACES_MAX;

const HEADER: &str = "zonelab-namespaces 1";
/// A list longer than this is not one zonelab wrote.
const LIST_BYTES_MAX: u64 = 64 * 1024;

/// One allocated namespace in the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Its NSID.
    pub nsid: u32,
    /// Attached to the subsystem's controllers.
    pub attached: bool,
    /// What Namespace Management was asked for; `None`: a namespace of the configuration.
    pub created: Option<NamespaceRequest>,
}

/// Where namespace `nsid` keeps its image, with `--backing base`.
pub fn image_path(base: &Path, nsid: u32) -> PathBuf {
    let mut path = base.as_os_str().to_owned();
    if nsid > 1 {
        path.push(format!(".ns{nsid}"));
    }
    PathBuf::from(path)
}

fn list_path(base: &Path) -> PathBuf {
    let mut path = base.as_os_str().to_owned();
    path.push(".namespaces");
    PathBuf::from(path)
}

fn damaged(path: &Path, what: String) -> ServeError {
    ImageError::NamespaceList { path: path.to_path_buf(), what }.into()
}

/// The list of `base`'s namespaces, `None` if there is none yet (the
/// configuration's, all attached). Anything but a regular file zonelab
/// wrote is refused, naming the line and what is wrong.
pub fn load(base: &Path) -> Result<Option<Vec<Entry>>, ServeError> {
    let path = list_path(base);
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ImageError::io(&path, e).into()),
    };
    if !meta.file_type().is_file() || meta.len() > LIST_BYTES_MAX {
        return Err(damaged(&path, format!("not a namespace list (a regular file of at most {LIST_BYTES_MAX} bytes)")));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| ImageError::io(&path, e))?;
    parse(&text).map(Some).map_err(|why| damaged(&path, why))
}

/// The entries of a namespace list's text; the error names the line.
pub fn parse(text: &str) -> Result<Vec<Entry>, String> {
    let mut lines = text.lines();
    if lines.next() != Some(HEADER) {
        return Err(format!("line 1: expected \"{HEADER}\""));
    }
    let mut entries: Vec<Entry> = Vec::new();
    for (i, line) in lines.enumerate() {
        let entry = parse_entry(line).map_err(|why| format!("line {}: {why}", i + 2))?;
        if entries.iter().any(|e| e.nsid == entry.nsid) {
            return Err(format!("line {}: NSID {} is listed twice", i + 2, entry.nsid));
        }
        entries.push(entry);
    }
    Ok(entries)
}

fn parse_entry(line: &str) -> Result<Entry, String> {
    let words: Vec<&str> = line.split(' ').collect();
    let number = |i: usize, what: &str| -> Result<u64, String> {
        words.get(i).and_then(|w| w.parse().ok()).ok_or_else(|| format!("{what} must be a number"))
    };
    let nsid = u32::try_from(number(0, "the NSID")?).unwrap_or(0);
    if nsid == 0 || nsid > NAMESPACES_MAX {
        return Err(format!("NSID must be 1 to {NAMESPACES_MAX}"));
    }
    let attached = match words.get(2) {
        Some(&"attached") => true,
        Some(&"detached") => false,
        _ => return Err("the third word must be attached or detached".into()),
    };
    let created = match (words.get(1), words.len()) {
        (Some(&"config"), 3) => None,
        (Some(&"created"), 7) => {
            let command_set = match words[3] {
                "nvm" => CommandSet::Nvm,
                "zoned" => CommandSet::Zoned,
                _ => return Err("the command set must be nvm or zoned".into()),
            };
            let lba_bytes = match number(4, "the LBA size")? {
                512 => 512,
                4096 => 4096,
                _ => return Err("the LBA size must be 512 or 4096".into()),
            };
            Some(NamespaceRequest { nsze: number(5, "NSZE")?, ncap: number(6, "NCAP")?, lba_bytes, command_set })
        }
        _ => return Err("expected `NSID config STATE` or `NSID created STATE SET LBA_BYTES NSZE NCAP`".into()),
    };
    Ok(Entry { nsid, attached, created })
}

/// The text of a namespace list of `entries`.
pub fn format(entries: &[Entry]) -> String {
    let mut text = format!("{HEADER}\n");
    for e in entries {
        let state = if e.attached { "attached" } else { "detached" };
        match e.created {
            None => text.push_str(&format!("{} config {state}\n", e.nsid)),
            Some(r) => {
                let set = if r.command_set == CommandSet::Nvm { "nvm" } else { "zoned" };
                text.push_str(&format!("{} created {state} {set} {} {} {}\n", e.nsid, r.lba_bytes, r.nsze, r.ncap));
            }
        }
    }
    text
}

/// Replaces `base`'s list with `entries`: written to FILE.namespaces.new,
/// made durable and renamed over the list, so a crash leaves the old list
/// or the new one. A leftover FILE.namespaces.new is removed only if it is
/// a regular file holding a list's header.
pub fn save(base: &Path, entries: &[Entry]) -> Result<(), ServeError> {
    let path = list_path(base);
    let mut new = path.clone().into_os_string();
    new.push(".new");
    let new = PathBuf::from(new);
    if let Ok(meta) = std::fs::symlink_metadata(&new) {
        let ours = meta.file_type().is_file()
            && meta.len() <= LIST_BYTES_MAX
            && std::fs::read_to_string(&new).is_ok_and(|t| t.starts_with(HEADER));
        if !ours {
            return Err(damaged(&new, "exists and is not a namespace list zonelab began: remove it by hand".into()));
        }
        std::fs::remove_file(&new).map_err(|e| ImageError::io(&new, e))?;
    }
    let io = |e| ServeError::from(ImageError::io(&new, e));
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).open(&new).map_err(io)?;
    file.write_all(format(entries).as_bytes()).map_err(io)?;
    file.sync_all().map_err(io)?;
    std::fs::rename(&new, &path).map_err(|e| ImageError::io(&path, e))?;
    Ok(())
}

/// Removes namespace `nsid`'s image, if there is one and it is an image
/// (both files regular, the zone file starting with an image's magic).
pub fn remove_image(base: &Path, nsid: u32) -> Result<(), ServeError> {
    let data = image_path(base, nsid);
    let zones = crate::image::files::zones_path(&data);
    let regular = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_file());
    if !regular(&data) || !regular(&zones) {
        return Ok(());
    }
    let mut magic = [0u8; 8];
    let is_image = std::fs::File::open(&zones)
        .and_then(|f| std::os::unix::fs::FileExt::read_exact_at(&f, &mut magic, 0))
        .is_ok_and(|()| &magic == crate::image::format::MAGIC);
    if !is_image {
        return Err(damaged(&zones, "is not a zonelab device image: left as it is".into()));
    }
    std::fs::remove_file(&zones).map_err(|e| ImageError::io(&zones, e))?;
    std::fs::remove_file(&data).map_err(|e| ImageError::io(&data, e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_reads_back_as_written_and_bad_lines_are_named() {
        let request = NamespaceRequest { nsze: 8192, ncap: 8192, lba_bytes: 512, command_set: CommandSet::Nvm };
        let entries = [
            Entry { nsid: 2, attached: true, created: None },
            Entry { nsid: 3, attached: false, created: Some(request) },
        ];
        assert_eq!(parse(&format(&entries)).unwrap(), entries);
        let bad = |text: &str| parse(&format!("{HEADER}\n{text}\n")).unwrap_err();
        assert!(bad("0 config attached").contains("line 2: NSID must be 1 to"));
        assert!(bad("2 config maybe").contains("attached or detached"));
        assert!(bad("2 created attached nvm 1024 8 8").contains("512 or 4096"));
        assert!(bad("2 created attached kv 512 8 8").contains("nvm or zoned"));
        assert!(bad("2 created attached nvm 512 8").contains("expected"));
        assert!(bad("2 config attached\n2 config detached").contains("line 3: NSID 2 is listed twice"));
        assert!(parse("zonelab-namespaces 2\n").unwrap_err().contains("line 1"));
    }

    #[test]
    fn only_a_list_or_an_image_zonelab_wrote_is_replaced_or_removed() {
        let dir = crate::scratch_dir("nslist");
        let base = dir.join("dev.img");
        assert_eq!(load(&base).unwrap(), None);
        let entries = [Entry { nsid: 1, attached: false, created: None }];
        save(&base, &entries).unwrap();
        assert_eq!(load(&base).unwrap().unwrap(), entries);
        // Someone else's file where the new list goes stops the save.
        std::fs::write(dir.join("dev.img.namespaces.new"), "precious").unwrap();
        assert!(save(&base, &entries).unwrap_err().to_string().contains("remove it by hand"));
        assert_eq!(std::fs::read_to_string(dir.join("dev.img.namespaces.new")).unwrap(), "precious");
        std::fs::write(dir.join("dev.img.ns2"), "data").unwrap();
        std::fs::write(dir.join("dev.img.ns2.zones"), "not an image").unwrap();
        assert!(remove_image(&base, 2).is_err());
        assert!(dir.join("dev.img.ns2").exists(), "left as it is");
        std::fs::write(dir.join("dev.img.namespaces"), "zonelab-namespaces 1\n9 config\n").unwrap();
        let err = load(&base).unwrap_err().to_string();
        assert!(err.contains("dev.img.namespaces") && err.contains("line 2"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
