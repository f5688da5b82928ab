# Part "persist": serve --backing keeps what the server answered across a clean stop, a kill -9 and f2fs.

# zl_persist_start WHAT [IMAGE]: serve --backing IMAGE (default /tmp/zl.img).
zl_persist_start() {
    zl_start --pace asap --backing "${2:-/tmp/zl.img}" || { zl_fail "serve --backing starts ($1)"; return 1; }
}

# zl_persist_read ZONE_OFFSET_64K: the 1 MiB at that offset (units of 64 KiB), into /tmp/zl-pgot.
zl_persist_read() {
    dd if=$ZL_DEV of=/tmp/zl-pgot bs=64k skip=$1 count=16 iflag=direct 2>/dev/null
}

zl_part_persist() {
    rm -f /tmp/zl.img /tmp/zl.img.zones
    dd if=/dev/urandom of=/tmp/zl-pdata bs=64k count=16 2>/dev/null
    zl_persist_start "new image" || return
    # Zone 3 starts at 192 MiB (3072 x 64 KiB); conventional zone 1 at 64 MiB.
    zl_check "write 1 MiB to zone 3" dd if=/tmp/zl-pdata of=$ZL_DEV bs=64k seek=3072 oflag=direct
    zl_check "close zone 3" blkzone close -o $((3 * 131072)) -c 1 $ZL_DEV
    zl_check "write 1 MiB to conventional zone 1" dd if=/tmp/zl-pdata of=$ZL_DEV bs=64k seek=1024 oflag=direct
    zl_stop
    zl_persist_start "clean restart" || return
    zl_persist_read 3072; zl_check "zone 3 data after a clean restart" cmp /tmp/zl-pdata /tmp/zl-pgot
    zl_persist_read 1024; zl_check "conventional data after a clean restart" cmp /tmp/zl-pdata /tmp/zl-pgot
    zl_check "zone 3 is still closed" sh -c "blkzone report -o $((3 * 131072)) -c 1 $ZL_DEV | grep -q 'zcond: 4(cl)'"
    zl_check "write 1 MiB to zone 4" dd if=/tmp/zl-pdata of=$ZL_DEV bs=64k seek=4096 oflag=direct
    kill -KILL $ZL_PID; wait $ZL_PID 2>/dev/null
    sleep 1
    zl_persist_start "after kill -9" || return
    zl_persist_read 4096; zl_check "zone 4 data after kill -9" cmp /tmp/zl-pdata /tmp/zl-pgot
    zl_equal "zone 4's write pointer after kill -9 (from the zone start)" "0x000800" \
        "$(blkzone report -o $((4 * 131072)) -c 1 $ZL_DEV | sed -n 's/.*wptr \(0x[0-9a-f]*\).*/\1/p')"
    zl_stop
    zl_persist_f2fs
    zl_persist_kill_loop
    zl_persist_f2fs_kill_loop
}

# The kill loop's device: 16 zones of 8 MiB (fio's zbd mode writes whole zones), 2 conventional.
ZL_KILL_GEOMETRY="--zones 16 --zone-size 8m --zone-capacity 8m --conventional-zones 2 --max-open 8 --max-active 12 --lba-bytes 4096"
ZL_KILL_ZONE_SECTORS=16384

# zl_persist_fio ZONE: checksummed writes over ZONE (8 MiB zones).
zl_persist_fio() {
    fio --name=persist --filename=$ZL_DEV --direct=1 --zonemode=zbd --rw=write --bs=64k --offset=$(($1 * 8))M \
        --size=8M --verify=crc32c --do_verify=0 --ioengine=psync
}

# zl_persist_verify ZONE: reads ZONE back and checks every block's checksum header (a read job with verify; fio's
# verify_only with zonemode=zbd would reset the zones first).
zl_persist_verify() {
    fio --name=verify --filename=$ZL_DEV --direct=1 --rw=read --bs=64k --offset=$(($1 * 8))M --size=8M \
        --verify=crc32c --ioengine=psync
}

# Twenty rounds: checksummed writes complete in one zone, then the server is killed (-9) while another fio job
# writes zones 9-15; after each restart every zone completed so far must verify.
zl_persist_kill_loop() {
    rm -f /tmp/zl-k.img /tmp/zl-k.img.zones
    zl_saved_geometry=$ZL_GEOMETRY
    ZL_GEOMETRY=$ZL_KILL_GEOMETRY
    zl_persist_start "kill loop" /tmp/zl-k.img || { ZL_GEOMETRY=$zl_saved_geometry; return; }
    zl_round=1; zl_verified=0
    while [ $zl_round -le 20 ]; do
        zl_done=$((2 + (zl_round - 1) % 7))
        blkzone reset -o $((zl_done * ZL_KILL_ZONE_SECTORS)) -c 1 $ZL_DEV &&
            blkzone reset -o $((9 * ZL_KILL_ZONE_SECTORS)) -c 7 $ZL_DEV &&
            zl_persist_fio $zl_done > /tmp/zl-kfio.log 2>&1 ||
            { zl_fail "round $zl_round: writes"; tail -8 /tmp/zl-kfio.log; break; }
        fio --name=load --filename=$ZL_DEV --direct=1 --zonemode=zbd --rw=write --bs=128k --offset=72M \
            --size=56M --ioengine=libaio --iodepth=8 > /dev/null 2>&1 &
        zl_fio=$!
        sleep 0.5
        kill -KILL $ZL_PID; wait $ZL_PID 2>/dev/null; wait $zl_fio 2>/dev/null
        zl_persist_start "round $zl_round after kill -9" /tmp/zl-k.img || break
        zl_z=2; zl_bad=""
        while [ $zl_z -le 8 ] && [ $zl_z -le $((zl_round + 1)) ]; do
            zl_persist_verify $zl_z > /tmp/zl-kfio.log 2>&1 || zl_bad="$zl_bad $zl_z"
            zl_z=$((zl_z + 1))
        done
        if [ -z "$zl_bad" ]; then
            zl_verified=$((zl_verified + 1))
        else
            zl_fail "round $zl_round: zones$zl_bad fail fio verify"; tail -8 /tmp/zl-kfio.log
        fi
        zl_round=$((zl_round + 1))
    done
    zl_equal "fio verify passes after each of 20 kill -9 restarts under load" 20 "$zl_verified"
    # The control: verification does read the data (a reset zone fails it).
    blkzone reset -o $((2 * ZL_KILL_ZONE_SECTORS)) -c 1 $ZL_DEV
    zl_check_fails "fio verify of a reset zone fails" zl_persist_verify 2
    zl_stop
    ZL_GEOMETRY=$zl_saved_geometry
}

# f2fs on a backed device of 64 zones (f2fs finds 16 too few): written, unmounted, the server killed, then
# fsck and the files' checksums.
zl_persist_f2fs() {
    modprobe f2fs 2>/dev/null; mkdir -p /mnt/p
    rm -f /tmp/zl-f2fs.img /tmp/zl-f2fs.img.zones
    ZL_GEOMETRY=$(echo "$ZL_GEOMETRY" | sed "s/--zones 16/--zones 64/")
    zl_persist_start "f2fs" /tmp/zl-f2fs.img || return
    zl_check "persist: mkfs.f2fs -m" mkfs.f2fs -f -m $ZL_DEV || return
    zl_check "persist: mount f2fs" mount -t f2fs $ZL_DEV /mnt/p || return
    for i in 1 2 3 4 5 6; do dd if=/dev/urandom of=/mnt/p/file$i bs=256k count=$((i * 2)) 2>/dev/null; done
    (cd /mnt/p && sha256sum file* > /tmp/zl-persist.sha256)
    sync
    zl_check "persist: unmount f2fs" umount /mnt/p
    kill -KILL $ZL_PID; wait $ZL_PID 2>/dev/null
    sleep 1
    zl_persist_start "f2fs after kill -9" /tmp/zl-f2fs.img || return
    zl_check "persist: fsck.f2fs after kill -9" fsck.f2fs -f $ZL_DEV
    zl_check "persist: mount f2fs after kill -9" mount -t f2fs $ZL_DEV /mnt/p || return
    zl_check "persist: files keep their checksums" sh -c "cd /mnt/p && sha256sum -c /tmp/zl-persist.sha256"
    zl_check "persist: unmount f2fs again" umount /mnt/p
    zl_stop
    ZL_GEOMETRY=$(echo "$ZL_GEOMETRY" | sed "s/--zones 64/--zones 16/")
}

# The f2fs kill loop's device: 512 MiB of 8 MiB zones, 4 conventional zones for f2fs's metadata.
ZL_F2FS_KILL_GEOMETRY="--zones 64 --zone-size 8m --zone-capacity 8m --conventional-zones 4 --max-open 8 --max-active 12 --lba-bytes 4096"

# zl_persist_f2fs_load: rewrites files without fsync until killed (the load the server dies under).
zl_persist_f2fs_load() {
    zl_l=0
    while [ $zl_l -lt 10000 ]; do
        dd if=/dev/urandom of=/mnt/p/load$((zl_l % 4)) bs=64k count=32 2>/dev/null || return 0
        zl_l=$((zl_l + 1))
    done
}

# Twenty rounds with f2fs mounted: a file written with fsync, then the server is killed (-9) while other files are
# being written. After each restart the mount must recover every fsynced file with its checksum, and fsck.f2fs must
# find the recovered file system consistent. (fsck.f2fs on the crashed image itself reports the write pointers that
# moved past f2fs's open segments and the fsynced data not yet rolled forward: recovery at mount fixes both.)
zl_persist_f2fs_kill_loop() {
    modprobe f2fs 2>/dev/null; mkdir -p /mnt/p
    rm -f /tmp/zl-fk.img /tmp/zl-fk.img.zones /tmp/zl-fk.sha256; touch /tmp/zl-fk.sha256
    zl_saved_geometry=$ZL_GEOMETRY
    ZL_GEOMETRY=$ZL_F2FS_KILL_GEOMETRY
    zl_persist_start "f2fs kill loop" /tmp/zl-fk.img && zl_check "f2fs kill loop: mkfs.f2fs -m" mkfs.f2fs -f -m $ZL_DEV ||
        { ZL_GEOMETRY=$zl_saved_geometry; return; }
    zl_round=1; zl_fscked=0; zl_intact=0
    while [ $zl_round -le 20 ]; do
        mount -t f2fs $ZL_DEV /mnt/p || { zl_fail "f2fs kill loop: mount before round $zl_round"; break; }
        rm -f /mnt/p/load*
        dd if=/dev/urandom of=/mnt/p/durable$zl_round bs=64k count=$((1 + zl_round % 5)) conv=fsync 2>/dev/null ||
            { zl_fail "f2fs kill loop: round $zl_round: fsynced write"; break; }
        (cd /mnt/p && sha256sum durable$zl_round >> /tmp/zl-fk.sha256)
        zl_persist_f2fs_load &
        zl_load=$!
        # Kill points spread over the first second of the load.
        sleep 0.$((2 + zl_round % 8))
        kill -KILL $ZL_PID; wait $ZL_PID 2>/dev/null; wait $zl_load 2>/dev/null
        umount -l /mnt/p 2>/dev/null
        zl_persist_start "f2fs round $zl_round after kill -9" /tmp/zl-fk.img || break
        # The mount recovers: it rolls fsynced data forward and moves the open segments past the write pointers.
        mount -t f2fs $ZL_DEV /mnt/p || { zl_fail "f2fs kill loop: mount after round $zl_round"; break; }
        if (cd /mnt/p && sha256sum -c /tmp/zl-fk.sha256 > /tmp/zl-fksum.log 2>&1); then
            zl_intact=$((zl_intact + 1))
        else
            zl_fail "f2fs kill loop: round $zl_round: fsynced files"; grep -v ': OK' /tmp/zl-fksum.log | head -5
        fi
        umount /mnt/p || { zl_fail "f2fs kill loop: unmount after round $zl_round"; break; }
        if fsck.f2fs --dry-run -f $ZL_DEV > /tmp/zl-fkfsck.log 2>&1; then
            zl_fscked=$((zl_fscked + 1))
        else
            zl_fail "f2fs kill loop: round $zl_round: fsck.f2fs"; tail -8 /tmp/zl-fkfsck.log
        fi
        zl_round=$((zl_round + 1))
    done
    zl_equal "every fsynced file keeps its checksum after each of 20 kill -9 restarts with f2fs mounted under load" \
        20 "$zl_intact"
    zl_equal "fsck.f2fs passes after the recovery of each of 20 kill -9 restarts" 20 "$zl_fscked"
    zl_check "f2fs kill loop: fsck.f2fs after a clean unmount" fsck.f2fs -f $ZL_DEV
    zl_stop
    ZL_GEOMETRY=$zl_saved_geometry
}
