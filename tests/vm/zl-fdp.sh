# Part "fdp": Flexible Data Placement (TP4146) over NVMe/TCP. The zn540-fdp (a conventional namespace with 8
# initially isolated reclaim unit handles) cut to 4 dies of 48 blocks (a 100 MiB namespace, 3 MiB reclaim units)
# (144 MiB of flash) is attached with Linux's nvme-tcp; nvme-cli's fdp plugin reads the configuration, handle usage, statistics,
# events and handle status, updates handles and enables events; fio's io_uring_cmd engine writes with fdp=1 on
# the generic character device and the handle status must show the placement; fio's own FDP test,
# t/nvmept_fdp.py, runs against it. fio 3.33 (the host's, in the guest) has no FDP options: those steps run with
# /usr/local/bin/fio-fdp (fio 3.41, built by scripts/vm/zoned-vm, or the fio ZONELAB_VM_FIO names) and are
# skipped without it. Needs the helpers of zl-nvmetcp.sh.

# The small zn540-fdp: 4 dies of 48 blocks of 768 KiB (144 MiB of flash), 100 zones of 1 MiB (the namespace's
# size), all conventional. All by --set: --zones would size the flash to the zones.
ZL_FDP_DEVICE="--device zn540-fdp --set flash.channels=4 --set flash.chips_per_channel=1 --set flash.planes_per_die=1
 --set flash.blocks_per_plane=48 --set flash.pages_per_block=48 --set mapping.d_zone=4
 --set namespace.zone_size_bytes=1m --set namespace.zone_capacity_bytes=1m --set namespace.zones=100
 --set namespace.conventional_zones=100 --set write_buffer.zone_buffer_bytes=1m --set conventional.gc_free_blocks_start=3"

# zl_fdp_ruamw DEV PID: the RUAMW nvme fdp status reports for placement identifier PID.
zl_fdp_ruamw() {
    nvme fdp status $1 2>/dev/null | awk -v p="$2" '
        /^Placement Identifier/ { gsub(";", "", $3); cur = $3 }
        /RUAMW/ && cur == p { print $NF; exit }'
}

# zl_fdp_stat CTRL NAME: a counter of nvme fdp stats (HBMW, MBMW, MBE) of endurance group 1.
zl_fdp_stat() {
    nvme fdp stats $1 -e 1 2>/dev/null | awk -v n="($2):" 'index($0, n) { print $NF; exit }'
}

zl_part_fdp() {
    ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
    zl_check "modprobe nvme-tcp" modprobe nvme-tcp || return
    # shellcheck disable=SC2086
    zl_nt_start 4426 $ZL_FDP_DEVICE --pace asap || { zl_fail "serve --nvme-tcp --device zn540-fdp starts"; return; }
    if ! zl_nt_connect 4426; then zl_nt_stop; return; fi
    ctrl=/dev/$(echo ${ZL_NT_DEV#/dev/} | sed 's/^\(nvme[0-9]*\).*/\1/')
    zl_equal "the FDP namespace is a regular block device" none "$(cat /sys/block/${ZL_NT_DEV#/dev/}/queue/zoned)"
    zl_equal "id-ctrl: CTRATT has FDPS (bit 19)" 524288 "$(( $(zl_ns_field $ctrl ctratt) & 524288 ))"
    zl_equal "id-ns: ENDGID 1" 1 "$(nvme id-ns $ZL_NT_DEV 2>/dev/null | awk '$1 == "endgid" { print $3 }')"
    zl_fdp_cli "$ctrl"
    zl_fdp_fio "$ctrl"
    zl_nt_stop
}

# nvme-cli's fdp plugin on the attached controller CTRL and its namespace.
zl_fdp_cli() {
    nvme fdp configs $1 -e 1 > /tmp/zl-fdp-configs 2>&1
    zl_equal "fdp configs: 8 handles" 1 "$(grep -c '^Number of Reclaim Unit Handles: 8$' /tmp/zl-fdp-configs)"
    zl_equal "fdp configs: 3 MiB reclaim units" 1 "$(grep -c '^Reclaim Unit Nominal Size: 3145728$' /tmp/zl-fdp-configs)"
    zl_equal "fdp configs: initially isolated handles" 8 "$(grep -c 'Initially Isolated' /tmp/zl-fdp-configs)"
    zl_equal "fdp usage: 8 host-specified handles" 8 "$(nvme fdp usage $1 -e 1 2>&1 | grep -c 'Host Specified')"
    zl_check_fails "fdp stats of endurance group 2 fails (no such group)" nvme fdp stats $1 -e 2
    zl_equal "endurance-log -g 1: full spare" 100 "$(nvme endurance-log $1 -g 1 2>&1 | awk '$1 == "avl_spare" { print $3 }')"
    full=$(zl_fdp_ruamw $ZL_NT_DEV 0)
    zl_equal "fdp status: a reclaim unit's LBAs on each of 8 handles" "768 8" \
        "$full $(nvme fdp status $ZL_NT_DEV 2>&1 | grep -c "RUAMW): $full\$")"
    hbmw=$(zl_fdp_stat $1 HBMW)
    dd if=/dev/urandom of=$ZL_NT_DEV bs=4k count=64 oflag=direct 2>/dev/null
    zl_equal "fdp stats: HBMW counts 256 KiB of block writes" $((hbmw + 262144)) "$(zl_fdp_stat $1 HBMW)"
    zl_equal "block writes (no directive) go to handle 0" $((full - 64)) "$(zl_fdp_ruamw $ZL_NT_DEV 0)"
    zl_check "fdp set-events: RU Not Fully Written on handle 0" nvme fdp set-events $ZL_NT_DEV -p 0 -e -t 0
    zl_check "fdp update -p 0" nvme fdp update $ZL_NT_DEV -p 0
    # The 4 LBAs still in the write buffer went, padded, to the old unit.
    zl_equal "the update gave handle 0 a fresh reclaim unit" "$full" "$(zl_fdp_ruamw $ZL_NT_DEV 0)"
    nvme fdp events $1 -e 1 -E > /tmp/zl-fdp-events 2>&1
    zl_equal "fdp events -E: RU Not Fully Written, PID 0" "1 1" \
        "$(grep -c 'Reclaim Unit Not Fully Written' /tmp/zl-fdp-events) $(grep -c 'PID): 0x0$' /tmp/zl-fdp-events)"
    zl_fdp_directives
    zl_check_fails "fdp update of a placement identifier the namespace lacks fails" nvme fdp update $ZL_NT_DEV -p 8
    zl_check_fails "fdp set-events of a placement handle it lacks fails" nvme fdp set-events $ZL_NT_DEV -p 9 -e -t 0
}

# The Data Placement directive of nvme-cli's write (-T 2 -S PID) and of a Write Zeroes sent by io-passthru: each
# takes only the reclaim unit of the placement identifier it names.
zl_fdp_directives() {
    dd if=/dev/urandom of=/tmp/zl-fdp-data bs=4k count=4 2>/dev/null
    before3=$(zl_fdp_ruamw $ZL_NT_DEV 3); before4=$(zl_fdp_ruamw $ZL_NT_DEV 4)
    zl_check "nvme write -T 2 -S 3: 4 blocks placed" nvme write $ZL_NT_DEV -s 1000 -c 3 -z 16384 -d /tmp/zl-fdp-data \
        -T 2 -S 3
    zl_equal "nvme write's directive reached placement identifier 3" $((before3 - 4)) "$(zl_fdp_ruamw $ZL_NT_DEV 3)"
    zl_check "Write Zeroes of 8 blocks with the directive (io-passthru)" nvme io-passthru $ZL_NT_DEV --opcode=0x08 \
        --namespace-id=1 --cdw10=2000 --cdw12=$((7 | 2 << 20)) --cdw13=$((4 << 16))
    zl_equal "Write Zeroes' directive reached placement identifier 4" $((before4 - 8)) "$(zl_fdp_ruamw $ZL_NT_DEV 4)"
    zl_equal "placement identifier 3 took none of them" $((before3 - 4)) "$(zl_fdp_ruamw $ZL_NT_DEV 3)"
}

# fio's io_uring_cmd engine with FDP on the generic character device: placement identifiers 0 and 1 (of the
# handle status list) take the writes, the others none.
zl_fdp_fio() {
    if ! command -v fio-fdp > /dev/null; then
        echo "SKIP: fio with FDP ($(fio --version) has no fdp option; the guest has no fio-fdp)"
        return
    fi
    before0=$(zl_fdp_ruamw $ZL_NT_DEV 0); before1=$(zl_fdp_ruamw $ZL_NT_DEV 1); before2=$(zl_fdp_ruamw $ZL_NT_DEV 2)
    zl_check "fio-fdp io_uring_cmd fdp=1 fdp_pli=0,1 on $ZL_NT_NG" fio-fdp --name=fdp --filename=$ZL_NT_NG \
        --ioengine=io_uring_cmd --cmd_type=nvme --fdp=1 --fdp_pli=0,1 --rw=write --bs=16k --size=1m --iodepth=1
    after0=$(zl_fdp_ruamw $ZL_NT_DEV 0); after1=$(zl_fdp_ruamw $ZL_NT_DEV 1)
    # 64 writes of 4 LBAs round robin: 128 LBAs on each (program units of 12 LBAs fill as they come).
    zl_equal "fio's writes reached placement identifier 0" 128 $((before0 - after0))
    zl_equal "fio's writes reached placement identifier 1" 128 $((before1 - after1))
    zl_equal "placement identifier 2 took none" "$before2" "$(zl_fdp_ruamw $ZL_NT_DEV 2)"
    zl_check "fio-fdp verifies what it wrote through FDP" fio-fdp --name=fdpv --filename=$ZL_NT_NG \
        --ioengine=io_uring_cmd --cmd_type=nvme --fdp=1 --fdp_pli=2,3 --rw=randwrite --bs=4k --size=4m \
        --iodepth=4 --verify=crc32c --do_verify=1
    zl_equal "fdp usage still shows 8 host-specified handles" 8 "$(nvme fdp usage $1 -e 1 2>&1 | grep -c 'Host Specified')"
    zl_fdp_gc "$1"
    zl_fdp_nvmept
}

# fio's own FDP test (t/nvmept_fdp.py of fio 3.41: 41 tests of fio's placement options, each checked against the
# handle status nvme-cli reads; it updates every handle before and after each test). Every test must pass.
zl_fdp_nvmept() {
    local t=/opt/fio-3.41/t/nvmept_fdp.py
    if [ ! -e $t ] || ! command -v python3 > /dev/null; then
        echo "SKIP: fio's t/nvmept_fdp.py (the guest lacks it or Python)"
        return
    fi
    rm -rf /tmp/zl-nvmept
    (cd /tmp && python3 $t --dut $ZL_NT_NG -f "$(command -v fio-fdp)" -a /tmp/zl-nvmept) > /tmp/zl-nvmept.log 2>&1
    grep -E '^Test [0-9]+ (FAILED|SKIPPED)|ERROR' /tmp/zl-nvmept.log | head -20
    summary=$(grep -E '^[0-9]+ test\(s\) passed' /tmp/zl-nvmept.log)
    echo "nvmept_fdp: ${summary:-no summary (see the lines above)}"
    zl_equal "fio's t/nvmept_fdp.py: every test passes" "0 failed" "$(echo "$summary" | grep -o '[0-9]* failed')"
}

# Random overwrites of the whole namespace through handles 0 and 1 make garbage collection run: Media
# Reallocated events (enabled first) and media bytes above host bytes in the statistics.
zl_fdp_gc() {
    for ph in 0 1; do
        zl_check "fdp set-events: Media Reallocated on handle $ph" nvme fdp set-events $ZL_NT_DEV -p $ph -e -t 128
    done
    hbmw=$(zl_fdp_stat $1 HBMW); mbmw=$(zl_fdp_stat $1 MBMW)
    zl_check "fio-fdp overwrites 200 MiB at random through handles 0 and 1" fio-fdp --name=fdpgc \
        --filename=$ZL_NT_NG --ioengine=io_uring_cmd --cmd_type=nvme --fdp=1 --fdp_pli=0,1 --rw=randwrite \
        --bs=64k --size=100m --io_size=200m --iodepth=4 --randseed=7
    host=$(( $(zl_fdp_stat $1 HBMW) - hbmw )); media=$(( $(zl_fdp_stat $1 MBMW) - mbmw ))
    echo "fdp gc: host bytes $host, media bytes $media, erased $(zl_fdp_stat $1 MBE)"
    zl_equal "fdp stats: HBMW counts the 200 MiB" 209715200 "$host"
    zl_equal "fdp stats: garbage collection's copies make MBMW exceed HBMW" 1 "$(( media > host ))"
    nvme fdp events $1 -e 1 > /tmp/zl-fdp-gc-events 2>&1
    zl_equal "fdp events: Media Reallocated logged" 1 "$(( $(grep -c 'Media Reallocated' /tmp/zl-fdp-gc-events) > 0 ))"
    nvme fdp status $ZL_NT_DEV 2>/dev/null | grep -A2 '^Placement Identifier [01];'
}
