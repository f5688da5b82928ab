# Part "zbd": fio's t/zbd/test-zbd-support on zonelab and on null_blk with the
# same geometry, both at once (two copies of the suite). Every test that passes
# on null_blk must pass on zonelab. Test 54 is left out: fio 3.33 itself
# crashes in it (on null_blk too).
ZL_ZBD_EXCLUDED="54"
# A smaller device than the other parts (256 MiB, 4 MiB zones of 3 MiB) keeps the suite's data volume, which
# scales with the zone size, within CI's time under QEMU software emulation.
ZL_ZBD_SIZE_MB=256 ZL_ZBD_ZONE_MB=4 ZL_ZBD_ZCAP_MB=3 ZL_ZBD_CONV=2 ZL_ZBD_OPEN=8 ZL_ZBD_ACTIVE=12

# zl_zbd_run DEVICE NAME: runs the suite (a copy of it, so that two can run at
# once), results in /tmp/zbd-NAME.txt as "NN STATUS" lines.
zl_zbd_run() {
    zl_zbd_args=""
    for t in $(sed -n 's/^test\([0-9]*\)().*/\1/p' /opt/fio/t/zbd/test-zbd-support); do
        case " $ZL_ZBD_EXCLUDED " in *" $t "*) continue;; esac
        zl_zbd_args="$zl_zbd_args -t $t"
    done
    rm -rf /opt/fio/t/zbd-$2 && cp -r /opt/fio/t/zbd /opt/fio/t/zbd-$2
    T0=$(zl_now)
    : > /tmp/zbd-$2.log
    # -w: every write test starts from reset zones. Without it a test inherits the zones earlier tests left active:
    # test 55 resets nothing and fio 3.33 ignores the max active limit, so on zonelab it passed in one run and failed
    # with EOVERFLOW (too many active zones) in the next, depending on what earlier tests' jobs had left open.
    (cd /opt/fio/t/zbd-$2 && timeout ${ZL_ZBD_TIMEOUT:-1500} ./test-zbd-support -w $zl_zbd_args "$1" 2>&1) |
        while IFS= read -r line; do echo "$line" >> /tmp/zbd-$2.log; echo "$2 [$(zl_now)] $line"; done
    echo "test-zbd-support on $2: $(zl_elapsed $T0) s; $(grep -E 'tests (passed|skipped|failed)' /tmp/zbd-$2.log | tr '\n' ' ')"
    sed -n 's/^Running test \([0-9]*\) \.\.\. *\([A-Z]*\).*/\1 \2/p' /tmp/zbd-$2.log > /tmp/zbd-$2.txt
}

zl_part_zbd() {
    zl_nullb nullb0 $ZL_ZBD_SIZE_MB $ZL_ZBD_ZONE_MB $ZL_ZBD_ZCAP_MB $ZL_ZBD_CONV $ZL_ZBD_OPEN $ZL_ZBD_ACTIVE ||
        { zl_fail "null_blk with the suite's geometry"; return; }
    ZL_GEOMETRY="--zones $((ZL_ZBD_SIZE_MB / ZL_ZBD_ZONE_MB)) --zone-size ${ZL_ZBD_ZONE_MB}m --zone-capacity ${ZL_ZBD_ZCAP_MB}m --conventional-zones $ZL_ZBD_CONV --max-open $ZL_ZBD_OPEN --max-active $ZL_ZBD_ACTIVE --lba-bytes 4096" \
        zl_start --pace asap --stats /tmp/zl-zbd-stats.txt || { zl_fail "zonelab serve starts"; return; }
    zl_zbd_run /dev/nullb0 nullblk &
    nullblk_pid=$!
    zl_zbd_run $ZL_DEV zonelab
    wait $nullblk_pid
    zl_stop
    zl_zbd_compare nullblk zonelab
    cat /tmp/zl-zbd-stats.txt
}

# zl_zbd_compare REFERENCE NAME: every test that passed in run REFERENCE must pass in run NAME.
zl_zbd_compare() {
    echo "fio zbd test | $1 | $2"
    for t in $(cut -d' ' -f1 /tmp/zbd-$1.txt); do
        n=$(sed -n "s/^$t //p" /tmp/zbd-$1.txt); z=$(sed -n "s/^$t //p" /tmp/zbd-$2.txt)
        echo "zbd test $t | ${n:-?} | ${z:-missing}"
        if [ "$n" = PASS ]; then
            if [ "$z" = PASS ]; then zl_pass "$2 zbd test $t"; else zl_fail "$2 zbd test $t: passes on $1, ${z:-missing} on $2"; fi
        fi
    done
    for t in $(grep -v ' PASS$' /tmp/zbd-$2.txt | cut -d' ' -f1); do
        echo "--- $2 log of zbd test $t:"; tail -15 /opt/fio/t/zbd-$2/test-zbd-support.log.$t 2>/dev/null
    done
    echo "zbd tests excluded: $ZL_ZBD_EXCLUDED (fio 3.33 crashes in test 54)"
}
