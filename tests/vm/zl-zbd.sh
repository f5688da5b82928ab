# Part "zbd": fio's t/zbd/test-zbd-support on zonelab and on null_blk with the
# same geometry. Every test that passes on null_blk must pass on zonelab.
# Test 54 is left out: fio 3.33 itself crashes in it (on null_blk too).
ZL_ZBD_EXCLUDED="54"

# zl_zbd_run DEVICE NAME: runs the suite test by test, results in /tmp/zbd-NAME.txt ("NN STATUS").
zl_zbd_run() {
    zl_zbd_args=""
    for t in $(sed -n 's/^test\([0-9]*\)().*/\1/p' /opt/fio/t/zbd/test-zbd-support); do
        case " $ZL_ZBD_EXCLUDED " in *" $t "*) continue;; esac
        zl_zbd_args="$zl_zbd_args -t $t"
    done
    T0=$(zl_now)
    (cd /opt/fio/t/zbd && timeout ${ZL_ZBD_TIMEOUT:-1200} ./test-zbd-support $zl_zbd_args "$1") > /tmp/zbd-$2.log 2>&1
    echo "test-zbd-support on $2: rc=$? $(zl_elapsed $T0) s; $(grep -E 'tests (passed|skipped|failed)' /tmp/zbd-$2.log | tr '\n' ' ')"
    sed -n 's/^Running test \([0-9]*\) \.\.\. \([A-Z]*\).*/\1 \2/p' /tmp/zbd-$2.log > /tmp/zbd-$2.txt
    mkdir -p /tmp/zbd-logs-$2 && cp /opt/fio/t/zbd/test-zbd-support.log.* /tmp/zbd-logs-$2/ 2>/dev/null
    rm -f /opt/fio/t/zbd/test-zbd-support.log.*
}

zl_part_zbd() {
    . /tests/lib.sh
    mk_nullb nullb0 1024 64 48 2 8 12 || { zl_fail "null_blk with the suite's geometry"; return; }
    zl_zbd_run /dev/nullb0 nullblk
    echo 0 > /sys/kernel/config/nullb/nullb0/power; rmdir /sys/kernel/config/nullb/nullb0
    zl_start --pace asap || { zl_fail "zonelab serve starts"; return; }
    zl_zbd_run $ZL_DEV zonelab
    zl_stop
    echo "fio zbd test | null_blk | zonelab"
    for t in $(cut -d' ' -f1 /tmp/zbd-nullblk.txt); do
        n=$(sed -n "s/^$t //p" /tmp/zbd-nullblk.txt); z=$(sed -n "s/^$t //p" /tmp/zbd-zonelab.txt)
        echo "zbd test $t | $n | ${z:-missing}"
        if [ "$n" = PASS ]; then
            if [ "$z" = PASS ]; then zl_pass "zbd test $t"; else zl_fail "zbd test $t: passes on null_blk, ${z:-missing} on zonelab"; fi
        fi
    done
    for t in $(grep -v ' PASS$' /tmp/zbd-zonelab.txt | cut -d' ' -f1); do
        echo "--- zonelab log of zbd test $t:"; tail -15 /tmp/zbd-logs-zonelab/test-zbd-support.log.$t 2>/dev/null
    done
    echo "zbd tests excluded: $ZL_ZBD_EXCLUDED (fio 3.33 crashes in test 54)"
}
