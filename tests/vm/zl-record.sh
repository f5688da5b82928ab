# Part "record": zonelab serve --nvme-tcp --record under fio and f2fs traffic from the kernel's nvme-tcp host,
# then zonelab replay of the recording in virtual time: the replayed device must see the recorded command stream
# (NSID, opcode and arguments of every command, in order), every command must end as recorded, and on the same
# device the replay's report must equal the live run's, in both loops (docs/nvme-tcp.md, "Recording and replay").
ZL_REC_GEOMETRY="--zones 64 --zone-size 64m --zone-capacity 48m --conventional-zones 0 --max-open 8 --max-active 12 --lba-bytes 4096"

# zl_rec_stream FILE: a recording's command stream: NSID, OP and ARGS of each command line.
zl_rec_stream() { grep -v '^#' "$1" | tail -n +2 | cut -d' ' -f6,11-; }

# fio (sequential writes at QD 4 through the block layer, random reads) and f2fs (mkfs, files, unmount).
zl_rec_traffic() {
    zl_check "record: fio zonemode=zbd writes on $ZL_NT_DEV" fio --name=w --filename=$ZL_NT_DEV --ioengine=libaio \
        --direct=1 --zonemode=zbd --rw=write --bs=64k --iodepth=4 --size=4z --io_size=32m --max_open_zones=4 \
        --output-format=terse
    zl_check "record: fio random reads on $ZL_NT_DEV" fio --name=r --filename=$ZL_NT_DEV --ioengine=libaio \
        --direct=1 --zonemode=zbd --rw=randread --bs=16k --iodepth=2 --size=4z --io_size=8m --output-format=terse
    # SIGUSR1 hands the recording's buffer to its file: what fio sent.
    kill -USR1 $ZL_NT_PID; sleep 1
    ZL_REC_FIO=$(zl_rec_stream /tmp/zl-rec.txt | wc -l)
    zl_check "record: mkfs.f2fs on $ZL_NT_DEV" mkfs.f2fs -f -m -c $ZL_NT_DEV /dev/nullb6 || return
    modprobe f2fs 2>/dev/null; mkdir -p /mnt/f
    zl_check "record: mount f2fs" mount -t f2fs /dev/nullb6 /mnt/f || return
    zl_f2fs_fill /tmp/zl-rec-f2fs.sha256
    zl_check "record: unmount f2fs" umount /mnt/f
}

zl_part_record() {
    ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
    zl_check "modprobe nvme-tcp" modprobe nvme-tcp || return
    modprobe null_blk nr_devices=0
    grep -q configfs /proc/mounts || mount -t configfs none /sys/kernel/config
    # A small metadata device, so that f2fs's data goes to the zoned namespace.
    nb=/sys/kernel/config/nullb/nullb6
    mkdir $nb && echo 4096 > $nb/blocksize && echo 192 > $nb/size && echo 1 > $nb/memory_backed && echo 1 > $nb/power ||
        { zl_fail "a regular null_blk for f2fs's metadata"; return; }
    rm -f /tmp/zl-rec.txt /tmp/zl-rep-open.txt /tmp/zl-rep-closed.txt
    zl_nt_start 4424 $ZL_REC_GEOMETRY --pace asap --record /tmp/zl-rec.txt ||
        { zl_fail "serve --nvme-tcp --record starts"; return; }
    if zl_nt_connect 4424; then
        zl_rec_traffic
    fi
    zl_nt_stop
    lines=$(zl_rec_stream /tmp/zl-rec.txt | wc -l)
    echo "record: $lines commands recorded ($ZL_REC_FIO by fio); by opcode:" \
        "$(zl_rec_stream /tmp/zl-rec.txt | cut -d' ' -f2 | sort | uniq -c | tr '\n' ' ')"
    zl_check "record: fio's commands are recorded" test "$ZL_REC_FIO" -gt 500
    zl_check "record: f2fs's commands are recorded" test $((lines - ZL_REC_FIO)) -gt 100
    for mode in open closed; do
        zl_check "record: zonelab replay --loop $mode ends every command as recorded" sh -c "zonelab replay \
            /tmp/zl-rec.txt $ZL_REC_GEOMETRY --loop $mode --record /tmp/zl-rep-$mode.txt --output-format=json+ \
            > /tmp/zl-rep-$mode.json"
        zl_rec_stream /tmp/zl-rep-$mode.txt > /tmp/zl-rep-$mode.stream
        zl_rec_stream /tmp/zl-rec.txt > /tmp/zl-rec.stream
        zl_check "record: the $mode-loop replay sends the recorded command stream" cmp /tmp/zl-rec.stream /tmp/zl-rep-$mode.stream
    done
    zonelab replay /tmp/zl-rec.txt $ZL_REC_GEOMETRY --recorded --output-format=json+ > /tmp/zl-rec-live.json
    for mode in open closed; do
        zl_check "record: the $mode-loop replay's report is the live run's" cmp /tmp/zl-rec-live.json /tmp/zl-rep-$mode.json
    done
}
