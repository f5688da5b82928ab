# Part "fs": f2fs (mkfs -m, mount, checksummed files, remount, fsck) and
# zonefs (mkzonefs, appends to sequential zone files, sizes and contents).

# zl_f2fs_fill SUMS: files of 768 KiB to 9 MiB in /mnt/f, a copy and a removal; their checksums to SUMS.
zl_f2fs_fill() {
    i=1
    while [ $i -le 12 ]; do
        dd if=/dev/urandom of=/mnt/f/file$i bs=256k count=$((i * 3)) 2>/dev/null || zl_fail "write /mnt/f/file$i"
        i=$((i + 1))
    done
    mkdir -p /mnt/f/dir && cp /mnt/f/file3 /mnt/f/dir/copy && rm /mnt/f/file2
    (cd /mnt/f && sha256sum file* dir/copy > $1)
    sync
}

zl_f2fs() {
    zl_check "mkfs.f2fs -m" mkfs.f2fs -f -m $ZL_DEV
    modprobe f2fs 2>/dev/null; mkdir -p /mnt/f
    zl_check "mount f2fs" mount -t f2fs $ZL_DEV /mnt/f || return
    zl_f2fs_fill /tmp/zl-f2fs.sha256
    zl_check "unmount f2fs" umount /mnt/f
    zl_check "fsck.f2fs finds no error" fsck.f2fs -f $ZL_DEV
    zl_check "mount f2fs again" mount -t f2fs $ZL_DEV /mnt/f || return
    zl_check "files read back with their checksums" sh -c "cd /mnt/f && sha256sum -c /tmp/zl-f2fs.sha256"
    zl_equal "a removed file stays removed" no "$( [ -e /mnt/f/file2 ] && echo yes || echo no)"
    zl_check "unmount f2fs again" umount /mnt/f
    zl_check "fsck.f2fs after the remount" fsck.f2fs -f $ZL_DEV
}

zl_zonefs() {
    zl_check "mkzonefs" mkzonefs -f $ZL_DEV
    modprobe zonefs 2>/dev/null; mkdir -p /mnt/z
    zl_check "mount zonefs" mount -t zonefs $ZL_DEV /mnt/z || return
    zl_equal "one file per sequential zone" 14 "$(ls /mnt/z/seq | wc -l)"
    zl_equal "seq/0 starts empty" 0 "$(stat -c %s /mnt/z/seq/0)"
    dd if=/dev/urandom of=/tmp/zl-chunk bs=64k count=16 2>/dev/null
    for f in 0 5 13; do
        zl_check "direct append of 1 MiB to seq/$f" dd if=/tmp/zl-chunk of=/mnt/z/seq/$f bs=64k oflag=direct,append conv=notrunc
        zl_check "second direct append to seq/$f" dd if=/tmp/zl-chunk of=/mnt/z/seq/$f bs=64k oflag=direct,append conv=notrunc
        zl_equal "seq/$f size after two appends" 2097152 "$(stat -c %s /mnt/z/seq/$f)"
        cat /tmp/zl-chunk /tmp/zl-chunk > /tmp/zl-expect
        dd if=/mnt/z/seq/$f of=/tmp/zl-got bs=64k iflag=direct 2>/dev/null
        zl_check "seq/$f holds both appends in order" cmp /tmp/zl-expect /tmp/zl-got
    done
    zl_check_fails "an overwrite inside seq/0 fails" dd if=/tmp/zl-chunk of=/mnt/z/seq/0 bs=4k count=1 oflag=direct conv=notrunc
    zl_check "truncate seq/5 to 0 resets its zone" truncate -s 0 /mnt/z/seq/5
    zl_equal "seq/5 is empty" 0 "$(stat -c %s /mnt/z/seq/5)"
    zl_check "unmount zonefs" umount /mnt/z
    zl_check "mount zonefs again" mount -t zonefs $ZL_DEV /mnt/z || return
    zl_equal "seq/13 size survives the remount" 2097152 "$(stat -c %s /mnt/z/seq/13)"
    dd if=/mnt/z/seq/13 of=/tmp/zl-got bs=64k iflag=direct 2>/dev/null
    zl_check "seq/13 contents survive the remount" cmp /tmp/zl-expect /tmp/zl-got
    zl_check "unmount zonefs again" umount /mnt/z
}

zl_part_fs() {
    # f2fs needs more room than 1 GiB with 64 MiB zones: 4 GiB of the same zones (the model keeps only what is written).
    ZL_GEOMETRY=$(echo "$ZL_GEOMETRY" | sed "s/--zones 16/--zones 64/") zl_start --pace asap --stats /tmp/zl-fs-stats.txt ||
        { zl_fail "zonelab serve starts (f2fs)"; return; }
    zl_f2fs
    zl_stop
    cat /tmp/zl-fs-stats.txt
    zl_start --pace asap || { zl_fail "zonelab serve starts (zonefs)"; return; }
    zl_zonefs
    zl_stop
}
