
here=$(cd "$(dirname "$0")" && pwd)
results="$here/results"

die() { echo "run.sh: $*" >&2; exit 2; }
usage() {
    echo "usage: $0 --destroy-data-on DEVICE [--device DEVICE] [--only JOB] [--skip-timed]" >&2
    echo "  runs every job of jobs/ with fio and times zone finishes and resets with nvme-cli;" >&2
    echo "  every zone of DEVICE is reset before each job: ALL DATA ON IT IS LOST" >&2
    exit 2
}

dev=$PLAN_DEVICE confirm="" only="" timed=1
while [ $# -gt 0 ]; do
    case "$1" in
        --destroy-data-on) [ $# -ge 2 ] || usage; confirm=$2; shift 2 ;;
        --destroy-data-on=*) confirm=${1#*=}; shift ;;
        --device) [ $# -ge 2 ] || usage; dev=$2; shift 2 ;;
        --device=*) dev=${1#*=}; shift ;;
        --only) [ $# -ge 2 ] || usage; only=$2; shift 2 ;;
        --skip-timed) timed=0; shift ;;
        -h | --help) usage ;;
        *) die "unknown argument '$1' (--help lists them)" ;;
    esac
done

# --- Safety checks: all of them pass before anything is written. ---
[ -n "$confirm" ] || die "refusing to run: it destroys all data on $dev; say so with --destroy-data-on $dev"
[ "$confirm" = "$dev" ] || die "refusing to run: --destroy-data-on names '$confirm', but the device is '$dev'"
[ -e "$dev" ] || die "refusing to run: $dev does not exist"
real=$(readlink -f -- "$dev")
name=${real##*/}
if [ -c "$real" ] && [[ $name =~ ^ng[0-9]+n[0-9]+$ ]]; then
    blk="nvme${name#ng}" # the generic char device's namespace as a block device
    fill_engine=io_uring_cmd
elif [ -b "$real" ] && [[ $name =~ ^nvme[0-9]+n[0-9]+$ ]]; then
    blk=$name
    fill_engine=libaio
else
    die "refusing to run: $dev is neither an NVMe namespace (/dev/nvmeXnY) nor its generic char device (/dev/ngXnY)"
fi
sys=/sys/block/$blk
[ -r "$sys/queue/zoned" ] || die "refusing to run: no $sys/queue/zoned: is $blk a namespace of this host?"
zoned=$(cat "$sys/queue/zoned")
[ "$zoned" = host-managed ] || die "refusing to run: $blk is not a zoned block device (queue/zoned: $zoned)"
[ -z "$(ls -A "$sys/holders" 2>/dev/null)" ] || die "refusing to run: $blk has holders ($(ls "$sys/holders")): in use"
for part in "$sys/$blk"p*; do
    if [ -e "$part" ]; then die "refusing to run: $blk has partitions (${part##*/})"; fi
done
if grep -qE "^/dev/$blk(p[0-9]+)?[[:space:]]" /proc/mounts; then die "refusing to run: $blk is mounted"; fi
if grep -qE "^/dev/$blk(p[0-9]+)?[[:space:]]" /proc/swaps; then die "refusing to run: $blk is a swap device"; fi
zone_bytes=$(($(cat "$sys/queue/chunk_sectors") * 512))
[ "$zone_bytes" = "$ZONE_BYTES" ] || die "the plan is for zones of $ZONE_BYTES bytes; $blk has $zone_bytes (zonelab profile --zone-size)"
lba=$(cat "$sys/queue/logical_block_size")
[ "$lba" = "$LBA_BYTES" ] || die "the plan is for $LBA_BYTES-byte LBAs; $blk has $lba (zonelab profile --lba-bytes)"
zones=$(cat "$sys/queue/nr_zones")
[ "$zones" -ge "$ZONES_NEEDED" ] || die "the plan needs $ZONES_NEEDED zones; $blk has $zones"
command -v fio >/dev/null || die "fio is not installed (3.33 or later)"
command -v nvme >/dev/null || die "nvme-cli is not installed"
if command -v blkzone >/dev/null; then
    cap=$(blkzone report -c 1 "/dev/$blk" | sed -n 's/.*cap 0x\([0-9a-f]*\).*/\1/p')
    [ -z "$cap" ] || [ $((16#$cap * 512)) = "$ZCAP_BYTES" ] ||
        die "the plan is for a zone capacity of $ZCAP_BYTES bytes; $blk has $((16#$cap * 512)) (zonelab profile --zone-capacity)"
fi
[ "$(id -u)" = 0 ] || die "run it as root: fio and nvme-cli need the raw device"

reset_all() {
    if command -v blkzone >/dev/null; then blkzone reset "/dev/$blk"; else nvme zns reset-zone "$dev" -a; fi
}

mkdir -p "$results"
echo "run.sh: $dev ($blk): $zones zones of $zone_bytes bytes; results in $results"

# --- The fio jobs: each on a device whose zones were all reset. ---
for entry in "${JOBS[@]}"; do
    job=${entry%%:*} needs=${entry#*:}
    [ -z "$only" ] || [ "$job" = "$only" ] || continue
    out="$results/$job.json"
    if [ -s "$out" ]; then echo "run.sh: $job: kept $out (remove it to rerun)"; continue; fi
    if [ "$needs" != - ] && fio --cmdhelp="$needs" 2>&1 | grep -q "No such command"; then
        echo "run.sh: $job: skipped: this fio has no '$needs' option (SPDK's fio plugin and ConfZNS++'s fio have)"
        continue
    fi
    reset_all
    tmp=$(mktemp)
    { printf '[global]\nfilename=%s\n' "$dev"; cat "$here/jobs/$job.fio"; } >"$tmp"
    echo "run.sh: $job"
    if ! fio --output-format=json --output="$out.part" "$tmp"; then
        rm -f "$tmp"
        die "$job: fio failed; $out.part holds what it wrote"
    fi
    rm -f "$tmp"
    mv "$out.part" "$out"
done

# --- Timed zone finishes and resets: fio issues no Zone Finish, so nvme-cli
# runs each command, timed around the process; the median time of a cheap
# command (Report Zones of one zone) is what starting nvme-cli costs. ---
now_ns() { date +%s%N; }
timed_ns() {
    local t0 t1
    t0=$(now_ns)
    "$@" >/dev/null || die "'$*' failed: the timings so far are in $csv.part"
    t1=$(now_ns)
    echo $((t1 - t0))
}
fill() { # fill ZONE LBAS: write LBAS blocks at the zone's start
    local bytes=$(($2 * LBA_BYTES))
    [ "$bytes" -gt 0 ] || return 0
    fio --name=fill --filename="$dev" --ioengine="$fill_engine" --direct=1 --zonemode=zbd --rw=write --bs=128k \
        --iodepth=8 --offset="$1z" --size=1z --io_size="$bytes" --output=/dev/null
}
if [ "$timed" = 1 ] && [ -z "$only" ]; then
    csv="$results/timed.csv"
    [ ! -s "$csv" ] || die "$csv exists: remove it to time the commands again"
    reset_all
    first=$((ZONES_NEEDED - SAMPLES))
    zone_lbas=$((ZONE_BYTES / LBA_BYTES)) zcap_lbas=$((ZCAP_BYTES / LBA_BYTES))
    echo "kind,op,lbas,zone,ns" >"$csv.part"
    for i in $(seq 1 "$BASELINE_SAMPLES"); do
        ns=$(timed_ns nvme zns report-zones "$dev" -s $((first * zone_lbas)) -d 1)
        echo "baseline,report,0,$first,$ns" >>"$csv.part"
    done
    for point in "${TIMED[@]}"; do
        op=${point%%:*} lbas=${point#*:}
        echo "run.sh: $op at $lbas LBAs"
        for i in $(seq 0 $((SAMPLES - 1))); do
            zone=$((first + i)) slba=$(((first + i) * zone_lbas))
            nvme zns reset-zone "$dev" -s "$slba" >/dev/null
            if [ "$lbas" -lt "$zcap_lbas" ]; then nvme zns open-zone "$dev" -s "$slba" >/dev/null; fi
            fill "$zone" "$lbas"
            sleep 1
            ns=$(timed_ns nvme zns "$op-zone" "$dev" -s "$slba")
            echo "sample,$op,$lbas,$zone,$ns" >>"$csv.part"
        done
    done
    mv "$csv.part" "$csv"
fi
echo "run.sh: done; calibrate with: zonelab calibrate $here"
