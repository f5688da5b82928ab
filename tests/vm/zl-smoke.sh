# Part "smoke": the block device's shape, data, zone commands, errnos, statistics and removal.
zl_queue() { cat /sys/block/$(basename $ZL_DEV)/queue/$1; }

# A server running as root must not write through a link planted where its statistics go.
zl_smoke_stats_file() {
    echo precious > /tmp/zl-precious
    ln -sf /tmp/zl-precious /tmp/zl-link
    zl_check_fails "serve refuses a --stats path that is a symlink" zonelab serve --ublk $ZL_GEOMETRY --stats /tmp/zl-link
    zl_equal "the symlink's target is untouched" precious "$(cat /tmp/zl-precious)"
    zl_check_fails "serve refuses an existing --stats file" zonelab serve --ublk $ZL_GEOMETRY --stats /tmp/zl-precious
    zl_equal "the existing file is untouched" precious "$(cat /tmp/zl-precious)"
}

zl_part_smoke() {
    zl_smoke_stats_file
    rm -f /tmp/zl-stats.txt
    zl_start --pace asap --stats /tmp/zl-stats.txt || { zl_fail "zonelab serve starts"; return; }
    zl_pass "zonelab serve starts ($ZL_DEV)"
    zl_equal "queue/zoned" host-managed "$(zl_queue zoned)"
    zl_equal "queue/nr_zones" 16 "$(zl_queue nr_zones)"
    zl_equal "queue/chunk_sectors (64 MiB zones)" 131072 "$(zl_queue chunk_sectors)"
    zl_equal "queue/max_open_zones" 8 "$(zl_queue max_open_zones)"
    zl_equal "queue/max_active_zones" 12 "$(zl_queue max_active_zones)"
    zl_equal "queue/logical_block_size" 4096 "$(zl_queue logical_block_size)"
    blkzone report $ZL_DEV > /tmp/zl-report.txt 2>&1
    zl_equal "two conventional zones" 2 "$(grep -c 'CONVENTIONAL' /tmp/zl-report.txt)"
    zl_equal "fourteen empty sequential zones" 14 "$(grep -c 'zcond: 1(em)' /tmp/zl-report.txt)"
    zl_equal "zone capacity 48 MiB" 14 "$(grep -c 'cap 0x018000' /tmp/zl-report.txt)"
    # data: conventional zone and sequential zone 2 (sector 262144 = 128 MiB)
    dd if=/dev/urandom of=/tmp/zl-data bs=64k count=16 2>/dev/null
    zl_check "write 1 MiB to a conventional zone" dd if=/tmp/zl-data of=$ZL_DEV bs=64k seek=3 oflag=direct conv=notrunc
    zl_check "write 1 MiB at a sequential zone's write pointer" dd if=/tmp/zl-data of=$ZL_DEV bs=64k seek=2048 oflag=direct conv=notrunc
    dd if=$ZL_DEV of=/tmp/zl-back bs=64k skip=2048 count=16 iflag=direct 2>/dev/null
    zl_check "sequential zone reads back what was written" cmp /tmp/zl-data /tmp/zl-back
    dd if=$ZL_DEV of=/tmp/zl-back bs=64k skip=3 count=16 iflag=direct 2>/dev/null
    zl_check "conventional zone reads back what was written" cmp /tmp/zl-data /tmp/zl-back
    zl_equal "write pointer advanced by 1 MiB" "0x000800" "$(blkzone report -o 262144 -c 1 $ZL_DEV | sed -n 's/.*wptr \(0x[0-9a-f]*\).*/\1/p')"
    zl_check_fails "a write off the write pointer fails" dd if=/tmp/zl-data of=$ZL_DEV bs=4k count=1 seek=$((32768 + 8)) oflag=direct conv=notrunc
    zl_check "finish zone 2" blkzone finish -o 262144 -c 1 $ZL_DEV
    zl_check "zone 2 is full" sh -c "blkzone report -o 262144 -c 1 $ZL_DEV | grep -q 'zcond:14(fu)'"
    zl_check "reset zone 2" blkzone reset -o 262144 -c 1 $ZL_DEV
    zl_check "zone 2 is empty again" sh -c "blkzone report -o 262144 -c 1 $ZL_DEV | grep -q 'zcond: 1(em)'"
    # open limits: 8 explicitly opened zones holding data, the ninth open fails with ETOOMANYREFS
    for z in 2 3 4 5 6 7 8 9; do
        blkzone open -o $((z * 131072)) -c 1 $ZL_DEV || zl_fail "open zone $z"
        dd if=/tmp/zl-data of=$ZL_DEV bs=4k count=1 seek=$((z * 16384)) oflag=direct conv=notrunc 2>/dev/null || zl_fail "write zone $z"
    done
    blkzone open -o $((10 * 131072)) -c 1 $ZL_DEV > /tmp/zl-open.txt 2>&1
    zl_check "a ninth open zone fails with 'Too many references'" grep -q 'Too many references' /tmp/zl-open.txt
    # active limits: 8 closed + 4 open zones are 12 active, a thirteenth fails with EOVERFLOW
    for z in 2 3 4 5 6 7 8 9; do blkzone close -o $((z * 131072)) -c 1 $ZL_DEV || zl_fail "close zone $z"; done
    zl_equal "eight closed zones" 8 "$(blkzone report $ZL_DEV | grep -c 'zcond: 4(cl)')"
    for z in 10 11 12 13; do blkzone open -o $((z * 131072)) -c 1 $ZL_DEV || zl_fail "open zone $z"; done
    blkzone open -o $((14 * 131072)) -c 1 $ZL_DEV > /tmp/zl-open.txt 2>&1
    zl_check "a thirteenth active zone fails with 'Value too large'" grep -q 'Value too large' /tmp/zl-open.txt
    zl_check "reset all zones" blkzone reset $ZL_DEV
    zl_equal "all sequential zones empty after reset all" 14 "$(blkzone report $ZL_DEV | grep -c 'zcond: 1(em)')"
    kill -USR1 $ZL_PID; sleep 1
    zl_check "SIGUSR1 writes statistics" grep -q '^write ' /tmp/zl-stats.txt
    zl_check "statistics give the write amplification" grep -q 'write_amplification=' /tmp/zl-stats.txt
    # Root's powers are dropped once the device exists: CAP_SYS_ADMIN (bit 21) stays for stopping it.
    zl_equal "the server keeps only CAP_SYS_ADMIN" 0000000000200000 "$(awk '/^CapEff/{print $2}' /proc/$ZL_PID/status)"
    zl_equal "its bounding set is CAP_SYS_ADMIN alone" 0000000000200000 "$(awk '/^CapBnd/{print $2}' /proc/$ZL_PID/status)"
    zl_equal "it cannot gain privileges (no_new_privs)" 1 "$(awk '/^NoNewPrivs/{print $2}' /proc/$ZL_PID/status)"
    zl_check "the ublk queue thread has no capabilities" \
        sh -c "awk '/^CapPrm/{print \$2}' /proc/$ZL_PID/task/*/status | grep -qx 0000000000000000"
    zl_stop
    cat /tmp/zl-stats.txt
}
