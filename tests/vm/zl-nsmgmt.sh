# Part "nsmgmt": Namespace Management and Attachment with nvme-cli over NVMe/TCP, as seed 001 used them on the
# WD ZN540: the drive ships with one zoned namespace holding all its capacity; nvme delete-ns removes it, nvme
# create-ns makes a 4 GiB conventional (NVM command set, 512-byte blocks) namespace and a 100 GiB zoned one, nvme
# attach-ns brings both up under the controller (Linux rescans on the Namespace Attribute Changed notice; nvme
# ns-rescan too), and fio runs on both at once. The server keeps an image (--backing): after a restart both
# namespaces are there, attached, with their data. Needs the helpers of zl-nvmetcp.sh (zl_nt_start,
# zl_nt_connect, zl_nt_stop).

# zl_ns_dev CTRL NSID: the block device of namespace NSID of controller CTRL (e.g. nvme1), waiting for it to appear.
zl_ns_dev() {
    for _ in $(seq 1 40); do
        for b in /sys/block/$1n* /sys/block/$1c*n*; do
            [ "$(cat $b/nsid 2>/dev/null)" = "$2" ] && [ -b /dev/${b#/sys/block/} ] && { echo /dev/${b#/sys/block/}; return 0; }
        done
        sleep 0.5
    done
    return 1
}

# zl_ns_field CTRL_DEV FIELD: a field of nvme id-ctrl (oacs, tnvmcap, unvmcap, cntlid) as nvme-cli prints it,
# without thousands separators (hexadecimal ones keep their 0x: use $((...))).
zl_ns_field() {
    nvme id-ctrl $1 2>/dev/null | awk -v f="$2" '$1 == f { gsub(",", "", $3); print $3; exit }'
}

# zl_ns_create CTRL_DEV NSZE BLOCK_BYTES CSI: nvme create-ns; prints the NSID it created, or nvme-cli's output.
zl_ns_create() {
    nvme create-ns $1 --nsze=$2 --ncap=$2 --block-size=$3 --csi=$4 > /tmp/zl-ns-create 2>&1
    nsid=$(sed -n 's/.*created nsid: *\([0-9]*\).*/\1/p' /tmp/zl-ns-create)
    [ -n "$nsid" ] && echo "$nsid" || cat /tmp/zl-ns-create
}

zl_part_nsmgmt() {
    ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up
    zl_check "modprobe nvme-tcp" modprobe nvme-tcp || return
    # The zn540 as it ships: 2 GiB zones (1077 MiB capacity), one namespace over all of its flash.
    rm -f /tmp/zl-nsm.img*
    ZL_NSM_ARGS="--device zn540 --zones 64 --pace asap --backing /tmp/zl-nsm.img"
    # shellcheck disable=SC2086
    zl_nt_start 4425 $ZL_NSM_ARGS || { zl_fail "serve --nvme-tcp starts (nsmgmt)"; return; }
    if ! zl_nt_connect 4425; then zl_nt_stop; return; fi
    ctrl=$(echo ${ZL_NT_DEV#/dev/} | sed 's/^\(nvme[0-9]*\).*/\1/')
    cdev=/dev/$ctrl
    zl_equal "id-ctrl: OACS has Namespace Management" 8 "$(( $(zl_ns_field $cdev oacs) & 8 ))"
    zl_equal "id-ctrl: NN is 16" 16 "$(( $(zl_ns_field $cdev nn) ))"
    tnvmcap=$(zl_ns_field $cdev tnvmcap)
    zl_equal "id-ctrl: the shipped namespace holds all capacity (UNVMCAP)" 0 "$(zl_ns_field $cdev unvmcap)"
    cntlid=$(( $(zl_ns_field $cdev cntlid) ))
    zl_check_fails "create-ns without free capacity fails" nvme create-ns $cdev --nsze=262144 --ncap=262144 \
        --block-size=4096 --csi=2
    zl_check "nvme delete-ns -n 1" nvme delete-ns $cdev -n 1
    # The Namespace Attribute Changed notice makes Linux rescan by itself.
    for _ in $(seq 1 20); do ls /sys/block | grep -q "^${ctrl}n" || break; sleep 0.5; done
    zl_equal "the deleted namespace is gone without a rescan (the notice)" "" "$(ls /sys/block | grep "^${ctrl}n")"
    zl_check "nvme ns-rescan" nvme ns-rescan $cdev
    zl_equal "id-ctrl: all capacity free" "$tnvmcap" "$(zl_ns_field $cdev unvmcap)"
    # 4 GiB of 512-byte blocks on the NVM command set, then 100 GiB (50 zones) of 4 KiB blocks zoned.
    zl_equal "create-ns --csi=0: 4 GiB, 512-byte LBAs" 1 "$(zl_ns_create $cdev 8388608 512 0)"
    zl_equal "create-ns --csi=2: 100 GiB zoned" 2 "$(zl_ns_create $cdev 26214400 4096 2)"
    zl_equal "list-ns --all lists both, detached" 2 "$(nvme list-ns $cdev --all 2>/dev/null | grep -c '^\[')"
    zl_equal "list-ns (active) lists none yet" 0 "$(nvme list-ns $cdev 2>/dev/null | grep -c '^\[')"
    zl_check "nvme attach-ns -n 1" nvme attach-ns $cdev -n 1 -c $cntlid
    zl_equal "the attached NSID 1 appears without a rescan (the notice)" 1 "$(zl_ns_dev $ctrl 1 > /dev/null && echo 1)"
    zl_check "nvme attach-ns -n 2" nvme attach-ns $cdev -n 2 -c $cntlid
    zl_check_fails "attach-ns twice fails (Namespace Already Attached)" nvme attach-ns $cdev -n 2 -c $cntlid
    zl_check "nvme ns-rescan" nvme ns-rescan $cdev
    nvm=$(zl_ns_dev $ctrl 1); zoned=$(zl_ns_dev $ctrl 2)
    [ -n "$nvm" ] && [ -n "$zoned" ] || { zl_fail "NSIDs 1 and 2 appear as block devices"; zl_nt_stop; return; }
    zl_pass "both namespaces appear: $nvm (NSID 1) and $zoned (NSID 2)"
    zl_equal "NSID 1 is a regular block device" none "$(cat /sys/block/${nvm#/dev/}/queue/zoned)"
    zl_equal "NSID 1 has 512-byte blocks" 512 "$(cat /sys/block/${nvm#/dev/}/queue/logical_block_size)"
    zl_equal "NSID 1 holds 4 GiB" 8388608 "$(cat /sys/block/${nvm#/dev/}/size)"
    zl_equal "NSID 2 is host-managed zoned" host-managed "$(cat /sys/block/${zoned#/dev/}/queue/zoned)"
    zl_equal "NSID 2 has 50 zones" 50 "$(cat /sys/block/${zoned#/dev/}/queue/nr_zones)"
    # fio on both at once: random verified writes on the NVM namespace, sequential zoned ones on the other.
    fio --name=nvm --filename=$nvm --ioengine=libaio --direct=1 --rw=randwrite --bs=4k --iodepth=8 --size=64m \
        --verify=crc32c --do_verify=1 > /tmp/zl-ns-fio-nvm 2>&1 &
    fio_nvm=$!
    zl_check "fio zonemode=zbd on $zoned, beside fio on $nvm" fio --name=zns --filename=$zoned --ioengine=psync \
        --direct=1 --zonemode=zbd --rw=write --bs=128k --size=4g --io_size=256m --verify=crc32c --do_verify=1
    wait $fio_nvm
    zl_equal "fio randwrite with verification on $nvm" 0 "$?"
    grep -E 'err=|WRITE:' /tmp/zl-ns-fio-nvm
    zl_nsmgmt_restart || return
    zl_check "nvme detach-ns -n 2" nvme detach-ns $cdev -n 2 -c $cntlid
    zl_check_fails "detach-ns twice fails (Namespace Not Attached)" nvme detach-ns $cdev -n 2 -c $cntlid
    zl_check "nvme delete-ns -n 2" nvme delete-ns $cdev -n 2
    zl_check "nvme delete-ns -n 1 (attached: detached and deleted)" nvme delete-ns $cdev -n 1
    nvme ns-rescan $cdev > /dev/null 2>&1
    zl_equal "id-ctrl: all capacity free again" "$tnvmcap" "$(zl_ns_field $cdev unvmcap)"
    zl_nt_stop
    zl_equal "the deleted namespaces' images are gone, the list stays" "/tmp/zl-nsm.img.namespaces" \
        "$(ls /tmp/zl-nsm.img*)"
}

# The server stopped and started again on its image: both created namespaces come back attached with their data
# (what fio wrote), NSID 2 still zoned. Sets ctrl, cdev and cntlid for the new controller.
zl_nsmgmt_restart() {
    sum1=$(dd if=$nvm bs=1M count=64 iflag=direct 2>/dev/null | md5sum)
    sum2=$(dd if=$zoned bs=1M count=256 iflag=direct 2>/dev/null | md5sum)
    zl_nt_stop
    zl_equal "the namespace list names both" 2 "$(grep -c ' created attached ' /tmp/zl-nsm.img.namespaces)"
    # shellcheck disable=SC2086
    zl_nt_start 4425 $ZL_NSM_ARGS || { zl_fail "serve --nvme-tcp starts again on its image"; return 1; }
    if ! zl_nt_connect 4425; then zl_nt_stop; return 1; fi
    ctrl=$(echo ${ZL_NT_DEV#/dev/} | sed 's/^\(nvme[0-9]*\).*/\1/')
    cdev=/dev/$ctrl
    cntlid=$(( $(zl_ns_field $cdev cntlid) ))
    zl_equal "after a restart: list-ns lists both, attached" 2 "$(nvme list-ns $cdev 2>/dev/null | grep -c '^\[')"
    nvm=$(zl_ns_dev $ctrl 1); zoned=$(zl_ns_dev $ctrl 2)
    [ -n "$nvm" ] && [ -n "$zoned" ] || { zl_fail "after a restart: NSIDs 1 and 2 appear"; zl_nt_stop; return 1; }
    zl_equal "after a restart: NSID 1 holds what fio wrote" "$sum1" \
        "$(dd if=$nvm bs=1M count=64 iflag=direct 2>/dev/null | md5sum)"
    zl_equal "after a restart: NSID 2 holds what fio wrote" "$sum2" \
        "$(dd if=$zoned bs=1M count=256 iflag=direct 2>/dev/null | md5sum)"
    zl_equal "after a restart: NSID 2 is zoned with 50 zones" "host-managed 50" \
        "$(cat /sys/block/${zoned#/dev/}/queue/zoned) $(cat /sys/block/${zoned#/dev/}/queue/nr_zones)"
}
