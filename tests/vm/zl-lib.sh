# Helpers of the zonelab guest suite (sourced, POSIX sh with busybox).
# Every check counts as passed or failed; zl_summary prints the closing line.
ZL_PASSED=0
ZL_FAILED=0
ZL_LOG=/tmp/zl-check.log
# The geometry the issue asks for: 1 GiB, 64 MiB zones of 48 MiB, 2 conventional, max open 8, max active 12.
ZL_GEOMETRY="--zones 16 --zone-size 64m --zone-capacity 48m --conventional-zones 2 --max-open 8 --max-active 12 --lba-bytes 4096"

zl_now() { cut -d' ' -f1 /proc/uptime; }
zl_elapsed() { awk -v a="$1" -v b="$(zl_now)" 'BEGIN{printf "%.1f", b-a}'; }
zl_pass() { ZL_PASSED=$((ZL_PASSED + 1)); echo "PASS: $*"; }
zl_fail() { ZL_FAILED=$((ZL_FAILED + 1)); echo "FAIL: $*"; }

# zl_check DESCRIPTION COMMAND...: passes when the command succeeds; its output goes to $ZL_LOG.
zl_check() {
    zl_desc=$1; shift
    echo "== $zl_desc: $*" >> $ZL_LOG
    if "$@" >> $ZL_LOG 2>&1; then
        zl_pass "$zl_desc"
    else
        zl_rc=$?
        zl_fail "$zl_desc (exit status $zl_rc; the end of its output follows)"
        tail -5 $ZL_LOG
        return 1
    fi
}

# zl_check_fails DESCRIPTION COMMAND...: passes when the command fails.
zl_check_fails() {
    zl_desc=$1; shift
    echo "== $zl_desc (must fail): $*" >> $ZL_LOG
    if "$@" >> $ZL_LOG 2>&1; then zl_fail "$zl_desc: succeeded but must fail"; else zl_pass "$zl_desc"; fi
}

# zl_equal DESCRIPTION EXPECTED ACTUAL
zl_equal() {
    if [ "$2" = "$3" ]; then zl_pass "$1"; else zl_fail "$1: expected '$2', got '$3'"; fi
}

# zl_start [serve options...]: starts zonelab serve --ublk and sets ZL_DEV and ZL_PID.
zl_start() {
    modprobe ublk_drv 2>/dev/null
    rm -f /tmp/zl-serve.out /tmp/zl-serve.err
    zonelab serve --ublk $ZL_GEOMETRY "$@" > /tmp/zl-serve.out 2> /tmp/zl-serve.err &
    ZL_PID=$!
    ZL_DEV=""
    zl_wait_for 120 $ZL_PID zl_ublk_serving && return 0
    echo "zonelab serve did not come up:"; cat /tmp/zl-serve.out /tmp/zl-serve.err
    return 1
}

# zl_ublk_serving: the server has said which device it serves, and the device exists; sets ZL_DEV.
zl_ublk_serving() {
    ZL_DEV=$(sed -n 's/^zonelab: serving \(\/dev\/ublkb[0-9]*\).*/\1/p' /tmp/zl-serve.out)
    [ -n "$ZL_DEV" ] && [ -b "$ZL_DEV" ]
}

# zl_wait_for TRIES PID COMMAND...: runs COMMAND every half second until it succeeds (status 0), at most TRIES
# times, giving up early when process PID has exited (status 1).
zl_wait_for() {
    zl_tries=$1; zl_pid=$2; shift 2
    for _ in $(seq 1 $zl_tries); do
        "$@" && return 0
        kill -0 $zl_pid 2>/dev/null || return 1
        sleep 0.5
    done
    return 1
}

# zl_stop: SIGTERM, then checks that the server exited 0 and removed the device.
zl_stop() {
    [ -n "$ZL_PID" ] || return 1
    kill -TERM $ZL_PID
    wait $ZL_PID
    zl_stop_rc=$?
    zl_equal "serve exits 0 on SIGTERM" 0 "$zl_stop_rc"
    if [ -e "$ZL_DEV" ] || ls /sys/block 2>/dev/null | grep -q '^ublkb'; then
        zl_fail "SIGTERM removes $ZL_DEV"
    else
        zl_pass "SIGTERM removes $ZL_DEV"
    fi
    ZL_PID=""
}

# zl_nullb NAME SIZE_MIB ZONE_MIB ZCAP_MIB NR_CONV MAX_OPEN MAX_ACTIVE: a memory-backed zoned null_blk
# device /dev/NAME with 4 KiB blocks, configured through configfs.
zl_nullb() {
    modprobe null_blk nr_devices=0 || return 1
    grep -q configfs /proc/mounts || mount -t configfs none /sys/kernel/config
    zl_nb=/sys/kernel/config/nullb/$1
    mkdir "$zl_nb" || return 1
    echo 4096 > $zl_nb/blocksize
    echo "$2" > $zl_nb/size
    echo 1 > $zl_nb/memory_backed
    echo 1 > $zl_nb/zoned
    echo "$3" > $zl_nb/zone_size
    echo "$4" > $zl_nb/zone_capacity
    echo "$5" > $zl_nb/zone_nr_conv
    echo "$6" > $zl_nb/zone_max_open
    echo "$7" > $zl_nb/zone_max_active
    echo 1 > $zl_nb/power
}

zl_summary() {
    echo "$ZL_PASSED passed, $ZL_FAILED failed"
    [ "$ZL_FAILED" -eq 0 ]
}
