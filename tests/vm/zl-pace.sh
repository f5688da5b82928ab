# Part "pace": realtime pacing. A request must never complete before its
# simulated completion time, so fio's wall-clock latency is at least the
# simulated one; the gap is what a user sees of the pacing's precision.

# zl_fio_write_lat_us: mean write latency (µs, wall clock) of a QD-1 4 KiB sequential write job.
zl_fio_write_lat_us() {
    timeout 60 blkzone reset $ZL_DEV || echo "blkzone reset failed" >&2
    timeout 120 fio --name=pace --filename=$ZL_DEV --direct=1 --zonemode=zbd --rw=write --bs=4k --offset=128M --size=64M \
        --io_size=${1:-4M} --ioengine=psync --output-format=json 2>/dev/null |
        awk '/"write" :/ { w = 1 } w && /"lat_ns"/ { l = 1 } l && /"mean"/ { gsub(/[",]/, ""); printf "%.1f\n", $3 / 1000; exit }'
}

# zl_stats_write_mean_us FILE: mean simulated write latency (µs) from a statistics report.
zl_stats_write_mean_us() { awk '$1 == "write" { print $5 }' "$1"; }

# zl_pace_case NAME [serve options]: runs the job on a realtime server and compares the latencies.
zl_pace_case() {
    name=$1; shift
    rm -f /tmp/zl-pace.txt  # serve only writes a statistics file it creates
    zl_start --pace realtime --stats /tmp/zl-pace.txt "$@" || { zl_fail "zonelab serve starts ($name)"; return; }
    T0=$(zl_now)
    wall=$(zl_fio_write_lat_us 2M)
    echo "fio ($name) took $(zl_elapsed $T0) s"
    zl_stop
    cat /tmp/zl-serve.err
    sim=$(zl_stats_write_mean_us /tmp/zl-pace.txt)
    echo "pacing $name: simulated mean write latency ${sim} us, fio's wall-clock mean ${wall} us"
    if [ -n "$wall" ] && [ -n "$sim" ] && awk -v w="$wall" -v s="$sim" 'BEGIN { exit !(w >= s) }'; then
        zl_pass "realtime ($name): no request completes before its simulated time"
    else
        zl_fail "realtime ($name): wall-clock latency '$wall' us below simulated '$sim' us"
    fi
}

zl_part_pace() {
    zl_pace_case "zn540 timing"
    zl_pace_case "2 ms writes" --set controller.write_ns=2ms
}
