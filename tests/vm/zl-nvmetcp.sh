# Part "nvmetcp": zonelab serve --nvme-tcp inside the guest, attached with the
# kernel's nvme-tcp host over loopback: discovery, connect, the namespace as a
# zoned block device and /dev/ng*, nvme-cli's zns commands, the differential
# test against QEMU's ZNS namespace through nvme-cli on both, fio's
# io_uring_cmd engine on /dev/ng*, t/zbd/test-zbd-support beside null_blk,
# f2fs with the checksummed-file test, two namespaces of one device, and (zl-record.sh, also a part of its own:
# "record") fio and f2fs traffic recorded with serve --record and replayed with zonelab replay.
ZL_NT_NQN=nqn.2026-11.io.zonelab:vmtest
ZL_NT_HOST="--hostnqn nqn.2014-08.org.nvmexpress:uuid:5a1e0000-0000-4000-8000-00000000c0de --hostid 5a1e0000-0000-4000-8000-00000000c0de"

# zl_nt_start PORT [serve options...]: starts the target; sets ZL_NT_PID.
zl_nt_start() {
    zl_nt_port=$1; shift
    rm -f /tmp/zl-nt.out /tmp/zl-nt.err
    zonelab serve --nvme-tcp --listen 127.0.0.1:$zl_nt_port --nqn $ZL_NT_NQN "$@" > /tmp/zl-nt.out 2> /tmp/zl-nt.err &
    ZL_NT_PID=$!
    zl_wait_for "${ZL_NT_WAIT_S:-60}" $ZL_NT_PID grep -q "^zonelab: serving" /tmp/zl-nt.out && return 0
    echo "zonelab serve --nvme-tcp did not come up:"; cat /tmp/zl-nt.out /tmp/zl-nt.err
    return 1
}

# zl_nt_connect PORT: nvme connect; sets ZL_NT_DEV (block) and ZL_NT_NG (generic char device).
zl_nt_connect() {
    ls /sys/block > /tmp/zl-nt-before
    zl_check "nvme connect -t tcp" nvme connect -t tcp -a 127.0.0.1 -s $1 -n $ZL_NT_NQN $ZL_NT_HOST || return 1
    ZL_NT_DEV=""
    for _ in $(seq 1 40); do
        b=$(ls /sys/block | grep '^nvme' | grep -vxF -f /tmp/zl-nt-before | head -1)
        [ -n "$b" ] && [ -b /dev/$b ] && { ZL_NT_DEV=/dev/$b; break; }
        sleep 0.5
    done
    [ -n "$ZL_NT_DEV" ] || { zl_fail "the namespace appears as a block device"; dmesg | tail -20; return 1; }
    ZL_NT_NG=/dev/ng$(echo "$b" | sed 's/^nvme\([0-9]*\)\(c[0-9]*\)\{0,1\}n/\1n/')
    for _ in $(seq 1 20); do [ -c "$ZL_NT_NG" ] && break; sleep 0.5; done
    zl_pass "the namespace appears as $ZL_NT_DEV"
}

# zl_nt_stop: disconnects the host, then SIGTERM; the server must exit 0.
zl_nt_stop() {
    nvme disconnect -n $ZL_NT_NQN > /dev/null 2>&1
    kill -TERM $ZL_NT_PID
    wait $ZL_NT_PID
    zl_equal "serve --nvme-tcp exits 0 on SIGTERM" 0 "$?"
}

# zl_nt_append ZSLBA: appends /tmp/zl-nt-data (4 blocks) with nvme-cli; prints the LBA it reports, in decimal.
zl_nt_append() {
    nvme zns zone-append $ZL_NT_DEV -s $1 -z 16384 -d /tmp/zl-nt-data > /tmp/zl-nt-append 2>&1
    lba=$(sed -n 's/.*appended data to LBA \([0-9a-fA-Fx]*\).*/\1/p' /tmp/zl-nt-append)
    [ -n "$lba" ] && echo $((16#${lba#0x})) || cat /tmp/zl-nt-append
}

# zl_nt_zone_state SLBA: the zone's state as nvme-cli's report shows it.
zl_nt_zone_state() {
    nvme zns report-zones $ZL_NT_DEV | awk '/SLBA:/ { print $2, $8 }' | while read -r slba state; do
        [ $((slba)) -eq $1 ] && echo "$state"
    done
}

# nvme-cli's zns commands on the attached namespace.
zl_nt_nvme_cli() {
    zl_check "nvme zns id-ctrl" nvme zns id-ctrl $ZL_NT_DEV
    nvme zns id-ns $ZL_NT_DEV > /tmp/zl-nt-idns 2>&1
    zl_equal "nvme zns id-ns: zone size 16384 blocks" 1 "$(grep -c 'zsze:0x4000' /tmp/zl-nt-idns)"
    zl_equal "16 zones reported" 16 "$(nvme zns report-zones $ZL_NT_DEV | grep -c 'SLBA:')"
    dd if=/dev/urandom of=/tmp/zl-nt-data bs=4k count=4 2>/dev/null
    zl_equal "zone-append returns the LBA written" $((0x8000)) "$(zl_nt_append 0x8000)"
    zl_equal "a second append lands after the first" $((0x8004)) "$(zl_nt_append 0x8000)"
    dd if=$ZL_NT_DEV of=/tmp/zl-nt-back bs=4k skip=$((0x8004)) count=4 iflag=direct 2>/dev/null
    zl_check "the appended data reads back through the block device" cmp /tmp/zl-nt-data /tmp/zl-nt-back
    zl_check "nvme zns finish-zone" nvme zns finish-zone $ZL_NT_DEV -s 0x8000
    zl_equal "the finished zone is full" 1 "$(zl_nt_zone_state $((0x8000)) | grep -ciE '^(FULL|0xe0)$')"
    zl_check "nvme zns reset-zone" nvme zns reset-zone $ZL_NT_DEV -s 0x8000
    zl_equal "the reset zone is empty" 1 "$(zl_nt_zone_state $((0x8000)) | grep -ciE '^(EMPTY|0x10)$')"
    zl_check_fails "an append to a full zone fails" sh -c "nvme zns finish-zone $ZL_NT_DEV -s 0x4000 && nvme zns zone-append $ZL_NT_DEV -s 0x4000 -z 4096 -d /tmp/zl-nt-data"
    nvme zns reset-zone $ZL_NT_DEV -a > /dev/null 2>&1
    # Simple Copy and the ZNS+ vendor commands through nvme-cli (docs/nvme-tcp.md).
    zl_check "nvme write 4 blocks to zone 3" nvme write $ZL_NT_DEV -s $((3 * 16384)) -c 3 -z 16384 -d /tmp/zl-nt-data
    zl_check "nvme copy of 2 blocks to zone 5" nvme copy $ZL_NT_DEV --sdlba=$((5 * 16384)) --slbs=$((3 * 16384 + 1)) --blocks=1
    dd if=$ZL_NT_DEV of=/tmp/zl-nt-back bs=4k skip=$((5 * 16384)) count=2 iflag=direct 2>/dev/null
    dd if=/tmp/zl-nt-data of=/tmp/zl-nt-expect bs=4k skip=1 count=2 2>/dev/null
    zl_check "the copied blocks read back" cmp /tmp/zl-nt-expect /tmp/zl-nt-back
    zl_check "identify_mapping (vendor opcode 0x86) through nvme io-passthru" sh -c \
        "nvme io-passthru $ZL_NT_DEV --opcode=0x86 --namespace-id=1 --data-len=24 --read --raw-binary > /tmp/zl-nt-map && [ \$(stat -c %s /tmp/zl-nt-map) -eq 24 ]"
    nvme zns reset-zone $ZL_NT_DEV -a > /dev/null 2>&1
}

# QEMU offers 8 LBA formats, zonelab 1: their zone format extensions are compared as a set, without the in-use mark.
zl_nt_idns_normalize() { awk '/^lbafe/ { sub(/^lbafe *[0-9]*: */, "lbafe: "); sub(/ *\(in use\)/, ""); if (!seen[$0]++) print; next } { print }'; }

# The same nvme-cli command sequences (tests/vm/zl-diff.sh) on QEMU's ZNS namespace and on zonelab's.
zl_nt_diff() {
    qemu_dev=""
    for _ in $(seq 1 20); do
        for b in /sys/block/nvme*; do
            # nsid 1: QEMU's namespace without a ZRWA (nsid 2 has one, for the zrwa part).
            [ "$(cat $b/device/transport 2>/dev/null)" = pcie ] && [ "$(cat $b/nsid 2>/dev/null)" = 1 ] &&
                qemu_dev=/dev/${b#/sys/block/}
        done
        [ -n "$qemu_dev" ] && break; sleep 0.5
    done
    [ -n "$qemu_dev" ] || { zl_fail "QEMU's ZNS namespace is present"; return; }
    nvme zns id-ns $qemu_dev 2>&1 | zl_nt_idns_normalize > /tmp/zl-nt-idns-qemu
    nvme zns id-ns $ZL_NT_DEV 2>&1 | zl_nt_idns_normalize > /tmp/zl-nt-idns-zonelab
    if cmp -s /tmp/zl-nt-idns-qemu /tmp/zl-nt-idns-zonelab; then
        zl_pass "nvme zns id-ns: the same as QEMU's"
    else
        zl_fail "nvme zns id-ns differs from QEMU's (qemu | zonelab)"; diff /tmp/zl-nt-idns-qemu /tmp/zl-nt-idns-zonelab | head -10
    fi
    dd if=/dev/zero of=/tmp/zl-zero bs=4k count=32 2>/dev/null
    for seed in limits ${ZL_NT_DIFF_SEEDS:-1 2}; do
        f=/tmp/zl-nt-diff-$seed
        if [ $seed = limits ]; then zl_diff_limits > $f; else zl_diff_generate $seed ${ZL_DIFF_COMMANDS:-60} > $f; fi
        ZL_DIFF_DEV=$qemu_dev zl_diff_nvme $f || { zl_fail "nvme-cli on QEMU runs sequence $seed"; continue; }
        mv $f.nvme.status $f.qemu.status; mv $f.nvme.report $f.qemu.report
        ZL_DIFF_DEV=$ZL_NT_DEV zl_diff_nvme $f || { zl_fail "nvme-cli on zonelab runs sequence $seed"; continue; }
        echo "sequence $seed through nvme-cli: $(wc -l < $f.qemu.status) commands, $(awk '$1 != 0' $f.qemu.status | wc -l) failing on QEMU"
        zl_diff_compare "nvme-tcp sequence $seed through nvme-cli" $f nvme qemu
    done
}

# fio's io_uring_cmd engine on the generic character device, zonemode=zbd, with verification. Queue depth 1:
# passthrough commands bypass the block layer's zone write ordering, so deeper queues reorder writes within a zone
# (on any NVMe device; QD 4 here failed with Zone Invalid Write, as it must).
zl_nt_fio_ng() {
    [ -c "$ZL_NT_NG" ] || { zl_fail "$ZL_NT_NG is a character device"; return; }
    zl_pass "$ZL_NT_NG is a character device"
    zl_check "fio io_uring_cmd zonemode=zbd on $ZL_NT_NG" fio --name=ng --filename=$ZL_NT_NG --ioengine=io_uring_cmd \
        --cmd_type=nvme --zonemode=zbd --rw=write --bs=64k --iodepth=1 --size=4z --io_size=48m \
        --max_open_zones=4 --verify=crc32c --do_verify=1 --output-format=terse
    zl_check "fio io_uring_cmd random writes (zonemode=zbd, randwrite) on $ZL_NT_NG" \
        fio --name=ngr --filename=$ZL_NT_NG --ioengine=io_uring_cmd --cmd_type=nvme --zonemode=zbd \
        --rw=randwrite --bs=16k --iodepth=1 --offset=4z --size=4z --io_size=32m --max_open_zones=4
}

# zl_nt_latency DEVICE NAME: fio 4 KiB QD1 write then read latency (mean, microseconds) on the block device; printed,
# not asserted (docs/nvme-tcp.md quotes it). Pacing asap: what is measured is the transport's own overhead.
zl_nt_latency() {
    for rw in write randread; do
        fio --name=lat --filename=$1 --ioengine=psync --direct=1 --zonemode=zbd --rw=$rw --bs=4k --iodepth=1 \
            --offset=2z --size=2z --runtime=${ZL_NT_LAT_SECONDS:-5} --time_based --max_open_zones=2 \
            --output-format=json > /tmp/zl-nt-lat.json 2>/dev/null
        dir=read; [ $rw = write ] && dir=write
        mean=$(awk -v d="\"$dir\"" 'index($0, d " :") { s = 1 } s && /"lat_ns"/ { l = 1 } l && /"mean"/ { gsub(/[^0-9.]/, "", $3); print $3; exit }' /tmp/zl-nt-lat.json)
        echo "latency: $2 4k QD1 $rw mean $(awk -v ns="$mean" 'BEGIN { printf "%.1f", ns / 1000 }') us"
    done
}

# Two namespaces of one device, each with its own zone geometry (a device file's [[namespaces]]): both attach under
# one controller, nvme-cli identifies each by its NSID, and a write to one leaves the other untouched.
zl_nt_namespaces() {
    zonelab device show zn540 --zones 16 --zone-size 64m --zone-capacity 48m --max-open 8 --max-active 12 \
        > /tmp/zl-nt-ns.toml || { zl_fail "zonelab device show for the namespaces' device"; return; }
    printf '%s\n' '' '[[namespaces]]' 'zones = 8' '' '[[namespaces]]' 'zones = 8' 'zone_size_bytes = 33554432' \
        'zone_capacity_bytes = 16777216' >> /tmp/zl-nt-ns.toml
    zl_nt_start 4423 --device /tmp/zl-nt-ns.toml --pace asap || { zl_fail "serve --nvme-tcp starts (2 namespaces)"; return; }
    if zl_nt_connect 4423; then
        # Linux numbers the block devices in the order its (asynchronous) scan finds the namespaces, not by NSID.
        ctrl=${ZL_NT_DEV%n[0-9]*}; ns1=""; ns2=""
        for _ in $(seq 1 20); do
            for b in /sys/block/${ctrl#/dev/}n*; do
                case "$(cat $b/nsid 2>/dev/null)" in 1) ns1=/dev/${b#/sys/block/} ;; 2) ns2=/dev/${b#/sys/block/} ;; esac
            done
            [ -n "$ns1" ] && [ -n "$ns2" ] && [ -b "$ns2" ] && break; sleep 0.5
        done
        [ -n "$ns1" ] && [ -n "$ns2" ] || { zl_fail "NSIDs 1 and 2 appear as block devices"; zl_nt_stop; return; }
        ZL_NT_DEV=$ns1
        zl_equal "nvme list shows both namespaces" 2 "$(nvme list 2>/dev/null | grep -cE "^${ctrl}n[0-9]+ ")"
        zl_equal "namespace 1 has 8 zones" 8 "$(cat /sys/block/${ns1#/dev/}/queue/nr_zones)"
        zl_equal "namespace 2 has 8 zones" 8 "$(cat /sys/block/${ns2#/dev/}/queue/nr_zones 2>/dev/null)"
        zl_equal "namespace 2's zones are 32 MiB" 65536 "$(cat /sys/block/${ns2#/dev/}/queue/chunk_sectors 2>/dev/null)"
        zl_equal "nvme zns id-ns -n 2: zone size 8192 blocks" 1 "$(nvme zns id-ns $ns1 -n 2 2>&1 | grep -c 'zsze:0x2000')"
        zl_equal "nvme zns id-ns -n 1: zone size 16384 blocks" 1 "$(nvme zns id-ns $ns1 -n 1 2>&1 | grep -c 'zsze:0x4000')"
        dd if=/dev/urandom of=/tmp/zl-nt-data bs=4k count=4 2>/dev/null
        zl_check "nvme zns zone-append on namespace 2" nvme zns zone-append $ns2 -s 0x2000 -z 16384 -d /tmp/zl-nt-data
        dd if=$ns2 of=/tmp/zl-nt-back bs=4k skip=$((0x2000)) count=4 iflag=direct 2>/dev/null
        zl_check "namespace 2's data reads back" cmp /tmp/zl-nt-data /tmp/zl-nt-back
        zl_equal "namespace 1's zone 0, which holds the same LBA, stays empty" 1 "$(zl_nt_zone_state 0 | grep -ciE '^(EMPTY|0x10)$')"
        zl_check_fails "NSID 3 is not a namespace" nvme zns id-ns $ns1 -n 3
    fi
    zl_nt_stop
}

zl_part_nvmetcp() {
    ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
    zl_check "modprobe nvme-tcp" modprobe nvme-tcp || return
    modprobe nvme 2>/dev/null # QEMU's ZNS controller first: the differential's peer
    zl_nt_start 4420 $ZL_DIFF_GEOMETRY --pace asap --stats /tmp/zl-nt-stats.txt ||
        { zl_fail "zonelab serve --nvme-tcp starts"; return; }
    nvme discover -t tcp -a 127.0.0.1 -s 4420 $ZL_NT_HOST > /tmp/zl-nt-discover 2>&1
    zl_equal "nvme discover lists the subsystem" 1 "$(grep -c "subnqn: *$ZL_NT_NQN" /tmp/zl-nt-discover)"
    if zl_nt_connect 4420; then
        zl_equal "$ZL_NT_DEV is host-managed zoned" host-managed "$(cat /sys/block/${ZL_NT_DEV#/dev/}/queue/zoned)"
        zl_equal "$ZL_NT_DEV has 16 zones" 16 "$(cat /sys/block/${ZL_NT_DEV#/dev/}/queue/nr_zones)"
        zl_nt_nvme_cli
        zl_nt_diff
        zl_nt_fio_ng
        zl_nt_latency $ZL_NT_DEV nvme-tcp
    fi
    zl_nt_stop
    cat /tmp/zl-nt-stats.txt
    zl_nt_namespaces
    if zl_start --pace asap; then
        zl_nt_latency $ZL_DEV ublk
        zl_stop
    fi
    zl_nt_zbd
    zl_nt_f2fs
    zl_part_record # zl-record.sh: a recording of fio and f2fs traffic, replayed
}

# t/zbd/test-zbd-support on the nvme-tcp block device and on null_blk of the same geometry (no conventional
# zones: NVMe ZNS has none), both at once.
zl_nt_zbd() {
    zl_nullb nullb1 $ZL_ZBD_SIZE_MB $ZL_ZBD_ZONE_MB $ZL_ZBD_ZCAP_MB 0 $ZL_ZBD_OPEN $ZL_ZBD_ACTIVE ||
        { zl_fail "null_blk with the zbd geometry"; return; }
    zl_nt_start 4421 --zones $((ZL_ZBD_SIZE_MB / ZL_ZBD_ZONE_MB)) --zone-size ${ZL_ZBD_ZONE_MB}m \
        --zone-capacity ${ZL_ZBD_ZCAP_MB}m --conventional-zones 0 --max-open $ZL_ZBD_OPEN \
        --max-active $ZL_ZBD_ACTIVE --lba-bytes 4096 --pace asap || { zl_fail "serve --nvme-tcp starts (zbd)"; return; }
    if zl_nt_connect 4421; then
        zl_zbd_run /dev/nullb1 nullblk-noconv &
        nullblk_pid=$!
        zl_zbd_run $ZL_NT_DEV nvmetcp
        wait $nullblk_pid
        zl_zbd_compare nullblk-noconv nvmetcp
    fi
    zl_nt_stop
}

# zl_nt_regular_nullb NAME: a regular (not zoned) memory-backed null_blk of 512 MiB, for f2fs's metadata.
zl_nt_regular_nullb() {
    modprobe null_blk nr_devices=0 2>/dev/null
    nb=/sys/kernel/config/nullb/$1
    mkdir $nb && echo 4096 > $nb/blocksize && echo 512 > $nb/size && echo 1 > $nb/memory_backed && echo 1 > $nb/power
}

# zl_nt_f2fs_on ZONED META NAME: f2fs over a regular metadata device and a zoned device (NVMe ZNS has no
# conventional zones), the checksummed-file test; fsck's exit status goes to /tmp/zl-nt-fsck-NAME.
zl_nt_f2fs_on() {
    zl_check "$3: mkfs.f2fs -m with the zoned device added" mkfs.f2fs -f -m -c $1 $2 || return
    modprobe f2fs 2>/dev/null; mkdir -p /mnt/f
    zl_check "$3: mount f2fs" mount -t f2fs $2 /mnt/f || return
    zl_f2fs_fill /tmp/zl-nt-f2fs-$3.sha256
    zl_check "$3: unmount f2fs" umount /mnt/f
    fsck.f2fs -f $2 > /tmp/zl-nt-fsck-$3.log 2>&1
    echo $? > /tmp/zl-nt-fsck-$3
    echo "$3: fsck.f2fs exit status $(cat /tmp/zl-nt-fsck-$3)"; grep -E '^\[FSCK\]|[Ff]ix|[Ee]rror|nat_bits' /tmp/zl-nt-fsck-$3.log | head -20
    zl_check "$3: mount f2fs again" mount -t f2fs $2 /mnt/f || return
    zl_check "$3: files read back with their checksums" sh -c "cd /mnt/f && sha256sum -c /tmp/zl-nt-f2fs-$3.sha256"
    zl_check "$3: unmount f2fs again" umount /mnt/f
}

# f2fs on the nvme-tcp namespace and, as the reference, on a zoned null_blk of the same geometry: fsck.f2fs must
# end as it does on null_blk.
zl_nt_f2fs() {
    zl_nt_regular_nullb nullb2 && zl_nt_regular_nullb nullb3 || { zl_fail "regular null_blk devices for f2fs"; return; }
    zl_nullb nullb4 4096 64 48 0 8 12 || { zl_fail "a zoned null_blk for the f2fs reference"; return; }
    zl_nt_f2fs_on /dev/nullb4 /dev/nullb3 nullblk
    zl_nt_start 4422 $(echo "$ZL_DIFF_GEOMETRY" | sed "s/--zones 16/--zones 64/") --pace asap ||
        { zl_fail "serve --nvme-tcp starts (f2fs)"; return; }
    if zl_nt_connect 4422; then
        zl_nt_f2fs_on $ZL_NT_DEV /dev/nullb2 nvmetcp
        zl_equal "fsck.f2fs ends on nvme-tcp as on null_blk" "$(cat /tmp/zl-nt-fsck-nullblk)" "$(cat /tmp/zl-nt-fsck-nvmetcp 2>/dev/null)"
    fi
    zl_nt_stop
}
