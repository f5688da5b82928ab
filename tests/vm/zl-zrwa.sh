# Part "zrwa": the Zone Random Write Area (TP 4076) against QEMU's. QEMU's second ZNS namespace (nsid 2,
# scripts/vm-test: zoned.zrwas=64K, zoned.zrwafg=16K, zoned.numzrwa=4) and zonelab serve --nvme-tcp with the same
# geometry and ZRWA both get a fixed sequence and generated ones through nvme-cli (open-zone --zrwaa, writes in
# and past the window, zrwa-flush-zone, appends, close, finish, reset, with zone reports between them): every
# status, and every report's write pointers, states and attributes (ZRWAV), must be equal; so must the ZRWA
# fields of id-ns.
ZL_ZRWA_SET="--set namespace.zrwa.size_bytes=64k --set namespace.zrwa.flush_granularity_bytes=16k --set namespace.zrwa.resources=4"

# The sequence, one command a line: "openz ZSLBA" (open with ZRWA Allocate), "open|close|finish|reset ZSLBA",
# "write SLBA NLB", "append ZSLBA NLB", "flush LBA", "report". With ZRWAS 16 and ZRWAFG 4; zone z starts at
# z * 16384. It avoids the cases where zonelab's rules and QEMU 7.2's code part (docs/command-semantics.md,
# "Compared with QEMU and null_blk"): an Open with ZRWA Allocate of an opened zone, a flush of exactly ZRWAS + 1
# LBAs, and flushes past the zone capacity.
zl_zrwa_sequence() {
    cat <<'SEQ'
openz 0
write 5 3
write 0 8
write 12 4
report
write 33 1
write 30 2
report
flush 18
flush 19
flush 39
flush 15
append 0 1
report
openz 16384
write 16384 1
openz 32768
openz 49152
openz 65536
report
close 16384
write 16390 2
report
finish 32768
openz 65536
write 65600 4
report
open 81920
write 81920 2
openz 81920
reset 0
flush 16395
write 16396 32
write 16412 16
report
close 16384
flush 16415
reset 16384
openz 0
write 0 2
finish 0
report
SEQ
}

# zl_zrwa_generate SEED COUNT: a random sequence of the same commands on zones 0-4, with a report every ten. It
# keeps a model of the zones (ZRWAS 16, ZRWAFG 4, 4 ZRWAs; the open and active limits are out of reach with five
# zones) so that it stays out of the cases where zonelab and QEMU 7.2 part: an Open with ZRWA Allocate only of an
# Empty zone or of a Closed one without a ZRWA, no flush of exactly ZRWAS + 1 LBAs, and far from the capacity.
zl_zrwa_generate() {
    awk -v seed="$1" -v count="$2" 'BEGIN {
        srand(seed); Z = 16; G = 4; held = 0
        for (z = 0; z < 5; z++) { st[z] = "e"; wp[z] = 0; zr[z] = 0 }
        for (i = 0; i < count; i++) {
            if (i % 10 == 9) { print "report"; continue }
            z = int(rand() * 5); s = z * 16384; r = rand()
            if (r < 0.15) {
                if (st[z] != "e" && !(st[z] == "c" && !zr[z])) { i--; continue }
                print "openz", s
                if (wp[z] % G == 0 && (zr[z] || held < 4)) { if (!zr[z]) held++; zr[z] = 1; st[z] = "eo" }
            } else if (r < 0.55) {
                off = zr[z] ? int(rand() * (2 * Z + 4)) - 2 : (rand() < 0.85 ? 0 : 3); n = 1 + int(rand() * 16)
                print "write", s + wp[z] + off, n
                if (st[z] == "f" || off < 0) continue
                if (zr[z] ? off + n > 2 * Z : off != 0) continue
                if (st[z] != "eo") st[z] = "io"
                if (!zr[z]) wp[z] += n
                else if (off + n > Z) wp[z] += int((off + n - Z + G - 1) / G) * G
            } else if (r < 0.75) {
                k = rand() < 0.2 ? Z + 3 : int(rand() * (Z + 2)) - 2
                print "flush", s + wp[z] + k
                if (zr[z] && k >= 0 && k < Z && (k + 1) % G == 0) { wp[z] += k + 1; if (st[z] == "c") st[z] = "io" }
            } else if (r < 0.82) {
                print "append", s, 1 + int(rand() * 4)
            } else if (r < 0.90) {
                print "close", s
                if (st[z] == "io" || st[z] == "eo") st[z] = "c"
            } else if (r < 0.95) {
                print "finish", s; st[z] = "f"; if (zr[z]) held--; zr[z] = 0
            } else {
                print "reset", s; st[z] = "e"; wp[z] = 0; if (zr[z]) held--; zr[z] = 0
            }
        }
        print "report"
    }'
}

# zl_zrwa_report DEV: zones 0-5 as "zslba state wp attributes"; a full zone's write pointer is left out (NVMe
# leaves it undefined), and the state is its code (bookworm's nvme-cli prints the code).
zl_zrwa_report() {
    nvme zns report-zones $1 -d 6 | awk '/SLBA:/ {
        attrs = ($11 == "Attrs:") ? $12 : "-"; wp = $4; if ($8 == "0xe0" || $8 == "FULL") wp = "-"
        print "zone", $2, $8, wp, attrs }'
}

# zl_zrwa_one DEV COMMAND LBA [NLB]: one command of the sequence through nvme-cli.
zl_zrwa_one() {
    case $2 in
        openz) nvme zns open-zone $1 -s $3 --zrwaa ;;
        write) nvme write $1 -s $3 -c $(($4 - 1)) -z $(($4 * 4096)) -d /tmp/zl-zero ;;
        append) nvme zns zone-append $1 -s $3 -z $(($4 * 4096)) -d /tmp/zl-zero ;;
        flush) nvme zns zrwa-flush-zone $1 --lba=$3 ;;
        *) nvme zns $2-zone $1 -s $3 ;;
    esac
}

# zl_zrwa_run DEV SEQUENCE OUT: the sequence on DEV through nvme-cli; OUT gets one status a command (decimal
# SCT << 8 | SC) and each report's lines.
zl_zrwa_run() {
    nvme zns reset-zone $1 -a > /dev/null || return 1
    : > $3
    while read -r cmd a b; do
        if [ "$cmd" = report ]; then zl_zrwa_report $1 >> $3; continue; fi
        zl_zrwa_one $1 $cmd $a $b > /tmp/zl-zrwa.out 2>&1
        echo "$cmd $a $b: $(zl_nvme_status /tmp/zl-zrwa.out $?)" >> $3
    done < $2
}

# zl_zrwa_compare NAME SEQUENCE QEMU-DEV: the sequence through nvme-cli on QEMU's namespace and on zonelab's.
zl_zrwa_compare() {
    zl_zrwa_run $3 $2 $2.qemu || { zl_fail "nvme-cli runs the ZRWA $1 on QEMU"; return 1; }
    zl_zrwa_run $ZL_NT_DEV $2 $2.zonelab || { zl_fail "nvme-cli runs the ZRWA $1 on zonelab"; return 1; }
    zl_dc_codes=$(grep -v '^zone' $2.qemu | sed 's/.*: //' | sort | uniq -c | awk '{ printf "%s x%s ", $2, $1 }')
    echo "zrwa $1: $(grep -vc '^zone' $2.qemu) commands, statuses on QEMU: $zl_dc_codes"
    if cmp -s $2.qemu $2.zonelab; then
        zl_pass "ZRWA $1: same statuses, write pointers, states and attributes as QEMU"
    else
        zl_fail "ZRWA $1 differs from QEMU (qemu | zonelab)"
        diff $2.qemu $2.zonelab | head -20
    fi
}

# zl_zrwa_idns DEV: the ZRWA fields of nvme zns id-ns (numzrwa apart: QEMU 7.2 reports its parameter, not 0-based).
zl_zrwa_idns() { nvme zns id-ns $1 | grep -E '^(ozcs|zrwafg|zrwasz|zrwacap) *:' | tr -s ' '; }

zl_part_zrwa() {
    ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
    zl_check "modprobe nvme-tcp" modprobe nvme-tcp || return
    modprobe nvme 2>/dev/null
    qemu_dev=""
    for _ in $(seq 1 20); do
        for b in /sys/block/nvme*; do
            [ "$(cat $b/device/transport 2>/dev/null)" = pcie ] && [ "$(cat $b/nsid 2>/dev/null)" = 2 ] &&
                qemu_dev=/dev/${b#/sys/block/}
        done
        [ -n "$qemu_dev" ] && break; sleep 0.5
    done
    [ -n "$qemu_dev" ] || { zl_fail "QEMU's ZNS namespace with a ZRWA (nsid 2) is present"; return; }
    # shellcheck disable=SC2086
    zl_nt_start 4423 $ZL_DIFF_GEOMETRY $ZL_ZRWA_SET --pace asap || { zl_fail "serve --nvme-tcp with a ZRWA starts"; return; }
    if zl_nt_connect 4423; then
        dd if=/dev/zero of=/tmp/zl-zero bs=4k count=32 2>/dev/null
        zl_zrwa_idns $qemu_dev > /tmp/zl-zrwa-idns-qemu
        zl_zrwa_idns $ZL_NT_DEV > /tmp/zl-zrwa-idns-zonelab
        echo "id-ns ZRWA fields: QEMU $(tr '\n' ' ' < /tmp/zl-zrwa-idns-qemu); numzrwa: QEMU $(nvme zns id-ns $qemu_dev | grep numzrwa), zonelab $(nvme zns id-ns $ZL_NT_DEV | grep numzrwa)"
        zl_equal "id-ns ZRWA fields (ozcs, zrwafg, zrwasz, zrwacap) equal to QEMU's" \
            "$(cat /tmp/zl-zrwa-idns-qemu)" "$(cat /tmp/zl-zrwa-idns-zonelab)"
        zl_equal "id-ns reports the ZRWA (zrwasz 16)" 1 "$(grep -c '^zrwasz : 16$' /tmp/zl-zrwa-idns-zonelab)"
        zl_zrwa_sequence > /tmp/zl-zrwa-fixed
        zl_zrwa_compare "fixed sequence" /tmp/zl-zrwa-fixed $qemu_dev
        for seed in ${ZL_ZRWA_SEEDS:-1 2 3}; do
            zl_zrwa_generate $seed ${ZL_ZRWA_COMMANDS:-80} > /tmp/zl-zrwa-$seed
            zl_zrwa_compare "random sequence $seed" /tmp/zl-zrwa-$seed $qemu_dev
        done
        zl_equal "a window write off the write pointer succeeds on zonelab" 1 "$(grep -c '^write 5 3: 0$' /tmp/zl-zrwa-fixed.zonelab)"
        zl_equal "ZRWAV is set on zonelab's report of zone 1" yes "$(grep -q '^zone 0x4000 .* 0x8$' /tmp/zl-zrwa-fixed.zonelab && echo yes)"
    fi
    zl_nt_stop
}
