# Part "diff": differential test against QEMU's emulated ZNS namespace
# (/dev/nvme0n1, same geometry without conventional zones: QEMU has none).
# Generated sequences of zone commands go to QEMU through nvme-cli and to the
# model through `zonelab exec`; every command's status (and append LBA) and
# the final zone report must be equal.
ZL_DIFF_DEV=/dev/nvme0n1
ZL_DIFF_GEOMETRY="--zones 16 --zone-size 64m --zone-capacity 48m --conventional-zones 0 --max-open 8 --max-active 12 --lba-bytes 4096"
ZL_ZONE_LBAS=16384
ZL_ZCAP_LBAS=12288

# zl_diff_generate SEED COUNT: one command a line ("write SLBA NLB", "append ZSLBA NLB",
# "read SLBA NLB", "open|close|finish|reset ZSLBA", "resetall"), then "report".
zl_diff_generate() {
    awk -v seed="$1" -v count="$2" -v zl="$ZL_ZONE_LBAS" -v cap="$ZL_ZCAP_LBAS" 'BEGIN {
        srand(seed)
        for (z = 0; z < 16; z++) wp[z] = 0
        split("1 2 8 32", sizes, " ")
        for (i = 0; i < count; i++) {
            z = int(rand() * 16); n = sizes[1 + int(rand() * 4)]; r = rand(); s = z * zl
            if (r < 0.30) { off = wp[z]; if (rand() < 0.1) off += 8; print "write", s + off, n; if (off == wp[z] && wp[z] + n <= cap) wp[z] += n }
            else if (r < 0.45) { print "append", s, n; if (wp[z] + n <= cap) wp[z] += n }
            else if (r < 0.52) print "read", s, n
            else if (r < 0.64) print "open", s
            else if (r < 0.76) print "close", s
            else if (r < 0.84) { print "finish", s; wp[z] = cap }
            else if (r < 0.97) { print "reset", s; wp[z] = 0 }
            else { print "resetall"; for (z = 0; z < 16; z++) wp[z] = 0 }
        }
        print "report"
    }'
}

# Deliberate difference: NVMe leaves a full zone's write pointer undefined; QEMU reports all ones, zonelab the
# zone's capacity end (which is what Linux shows anyway: start + length). Full zones compare by state alone.
zl_diff_full_wp() { awk '$2 == "full" { $3 = "-" } { print }'; }

# A fixed sequence that runs into the open and active limits (8 and 12), which random ones rarely reach.
zl_diff_limits() {
    z=0; while [ $z -le 8 ]; do echo "open $((z * ZL_ZONE_LBAS))"; z=$((z + 1)); done       # the ninth: too many open
    z=0; while [ $z -le 7 ]; do echo "write $((z * ZL_ZONE_LBAS)) 1"; echo "close $((z * ZL_ZONE_LBAS))"; z=$((z + 1)); done
    z=8; while [ $z -le 12 ]; do echo "open $((z * ZL_ZONE_LBAS))"; z=$((z + 1)); done      # the thirteenth: too many active
    echo "write $((13 * ZL_ZONE_LBAS)) 1"                                                  # implicit open: too many active
    echo "append $((14 * ZL_ZONE_LBAS)) 1"
    echo "finish $((8 * ZL_ZONE_LBAS))"; echo "write $((13 * ZL_ZONE_LBAS)) 1"; echo "write $((8 * ZL_ZONE_LBAS)) 1"
    echo "reset $((0 * ZL_ZONE_LBAS))"; echo "close $((1 * ZL_ZONE_LBAS))"; echo "open $((15 * ZL_ZONE_LBAS))"
    echo "report"
}

# The command file's lines as a zonelab trace.
zl_diff_trace() {
    awk '{
        if ($1 == "write" || $1 == "read") printf "{\"op\":\"%s\",\"slba\":%s,\"nlb\":%s}\n", $1, $2, $3
        else if ($1 == "append") printf "{\"op\":\"append\",\"zslba\":%s,\"nlb\":%s}\n", $2, $3
        else if ($1 == "resetall") print "{\"op\":\"zone_mgmt\",\"action\":\"reset\",\"select_all\":true}"
        else if ($1 == "report") print "{\"op\":\"report_zones\",\"slba\":0,\"filter\":\"all\"}"
        else printf "{\"op\":\"zone_mgmt\",\"action\":\"%s\",\"slba\":%s}\n", $1, $2
    }'
}

# zonelab exec's results as "status lba" lines, and its final report as "zslba state wp" lines.
zl_diff_zonelab() {
    zl_diff_trace < $1 | zonelab exec $ZL_DIFF_GEOMETRY > $1.zl.json || return 1
    grep -v '"report_zones"' $1.zl.json | sed 's/.*"sct":\([0-9]*\),"sc":\([0-9]*\).*/\1 \2 &/' |
        awk '{ lba = "-"; if (match($0, /"lba":[0-9]+/)) lba = substr($0, RSTART + 6, RLENGTH - 6); print $1 * 256 + $2, lba }' > $1.zl.status
    grep '"report_zones"' $1.zl.json | sed 's/},{/\n/g' |
        sed -n 's/.*"zslba":\([0-9]*\),"wp":\([0-9]*\),.*"state":"\([a-z_]*\)".*/\1 \3 \2/p' | zl_diff_full_wp > $1.zl.report
}

# nvme-cli's status of the command whose output is in file $1 and exit code $2.
zl_nvme_status() {
    code=$(sed -n 's/.*NVMe status:.*(0x\([0-9a-fA-F]*\)).*/\1/p' $1 | head -1)
    if [ -n "$code" ]; then echo $((0x$code & 0x7ff)); elif [ "$2" -eq 0 ]; then echo 0; else echo "rc$2"; fi
}

zl_diff_nvme_one() {
    set -- $1
    case $1 in
        write) nvme write $ZL_DIFF_DEV -s $2 -c $(($3 - 1)) -z $(($3 * 4096)) -d /tmp/zl-zero ;;
        read) nvme read $ZL_DIFF_DEV -s $2 -c $(($3 - 1)) -z $(($3 * 4096)) -d /tmp/zl-read ;;
        append) nvme zns zone-append $ZL_DIFF_DEV -s $2 -z $(($3 * 4096)) -d /tmp/zl-zero ;;
        resetall) nvme zns reset-zone $ZL_DIFF_DEV -a ;;
        *) nvme zns $1-zone $ZL_DIFF_DEV -s $2 ;;
    esac
}

# nvme-cli's results and final report in the same forms as zl_diff_zonelab's.
zl_diff_nvme() {
    nvme zns reset-zone $ZL_DIFF_DEV -a > /dev/null || return 1
    : > $1.nvme.status
    while read -r line; do
        [ "$line" = report ] && continue
        zl_diff_nvme_one "$line" > /tmp/zl-nvme.out 2>&1
        rc=$?
        lba=$(sed -n 's/.*appended data to LBA \([0-9a-fA-Fx]*\).*/\1/p' /tmp/zl-nvme.out)
        [ -n "$lba" ] && lba=$((16#${lba#0x})) || lba="-"
        echo "$(zl_nvme_status /tmp/zl-nvme.out $rc) $lba" >> $1.nvme.status
    done < $1
    # bookworm's nvme-cli prints the state as its code (ZS << 4)
    nvme zns report-zones $ZL_DIFF_DEV | awk '/SLBA:/ { print $2, $4, $8 }' | while read -r slba wp state; do
        case $state in
            0x10|EMPTY) s=empty;; 0x20|IMP_OPENED) s=implicitly_opened;; 0x30|EXP_OPENED) s=explicitly_opened;;
            0x40|CLOSED) s=closed;; 0xe0|FULL) s=full;; 0xd0|READONLY) s=read_only;; 0xf0|OFFLINE) s=offline;; *) s=$state;;
        esac
        echo "$((slba)) $s $((wp))"
    done | zl_diff_full_wp > $1.nvme.report
}

zl_part_diff() {
    modprobe nvme 2>/dev/null
    for _ in $(seq 1 20); do [ -b $ZL_DIFF_DEV ] && break; sleep 0.5; done
    [ -b $ZL_DIFF_DEV ] || { zl_fail "QEMU's ZNS namespace $ZL_DIFF_DEV is present"; return; }
    dd if=/dev/zero of=/tmp/zl-zero bs=4k count=32 2>/dev/null
    for seed in limits ${ZL_DIFF_SEEDS:-1 2 3 4}; do
        f=/tmp/zl-diff-$seed
        if [ $seed = limits ]; then zl_diff_limits > $f; else zl_diff_generate $seed ${ZL_DIFF_COMMANDS:-60} > $f; fi
        zl_diff_zonelab $f || { zl_fail "zonelab exec runs sequence $seed"; continue; }
        zl_diff_nvme $f || { zl_fail "nvme-cli runs sequence $seed"; continue; }
        errors=$(awk '$1 != 0' $f.zl.status | wc -l)
        codes=$(awk '$1 != 0 { printf "0x%x\n", $1 }' $f.zl.status | sort | uniq -c | awk '{ printf "%s x%s ", $2, $1 }')
        echo "sequence $seed: $(wc -l < $f.zl.status) commands, $errors failing on zonelab (status codes: ${codes:-none})"
        zl_diff_compare "sequence $seed" $f zl nvme
    done
}

# zl_diff_compare WHAT FILE ZONELAB QEMU: the statuses (with append LBAs) and the final zone reports that
# FILE.ZONELAB.* and FILE.QEMU.* hold for sequence FILE must be equal; differences are printed.
zl_diff_compare() {
    zl_dc_f=$2; zl_dc_zl=$2.$3; zl_dc_q=$2.$4
    if cmp -s $zl_dc_zl.status $zl_dc_q.status; then
        zl_pass "$1: same statuses and append LBAs as QEMU"
    else
        zl_fail "$1: statuses differ from QEMU (line: command | zonelab | qemu)"
        paste -d'|' $zl_dc_f $zl_dc_zl.status $zl_dc_q.status | awk -F'|' '$2 != $3 { print NR": "$0 }' | head -10
    fi
    if cmp -s $zl_dc_zl.report $zl_dc_q.report; then
        zl_pass "$1: same final zone report as QEMU"
    else
        zl_fail "$1: zone reports differ (zslba: zonelab state wp | qemu state wp)"
        paste -d'|' $zl_dc_zl.report $zl_dc_q.report | awk -F'|' '{ split($1, a, " "); split($2, b, " ") } a[2] " " a[3] != b[2] " " b[3] { print a[1] ": " a[2] " " a[3] " | " b[2] " " b[3] }' | head -16
    fi
}
