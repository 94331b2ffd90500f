#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Installed by the nvidia-tuned Skyhook package; run at boot by rdma-vfs-ready.service.
# Polls /sys/class/net for virtual functions (interfaces whose device has a physfn
# link) until WANT are there, or the count is above zero and has not moved for
# SETTLE polls (a degraded NIC), or LIMIT seconds have passed. It exits 0 in every
# case: the unit orders kubelet, and a node held out of the cluster costs more than
# a node that joins with fewer RDMA devices.
WANT=4
# LIMIT stays below the unit's TimeoutStartSec=300, so the unit never fails.
LIMIT=290
EVERY=2
SETTLE=5
# SYS_CLASS_NET: where the interfaces are listed (tests point it at a fake tree).
NET="${SYS_CLASS_NET:-/sys/class/net}"

vfs() {
    n=0
    for dev in "$NET"/*; do
        [ -e "$dev/device/physfn" ] && n=$((n + 1))
    done
    echo "$n"
}

waited=0
previous=-1
same=0
while [ "$waited" -lt "$LIMIT" ]; do
    now=$(vfs)
    if [ "$now" -ge "$WANT" ]; then
        echo "rdma-vfs-ready: $now RDMA virtual functions after ${waited}s; kubelet may start"
        exit 0
    fi
    if [ "$now" -gt 0 ] && [ "$now" -eq "$previous" ]; then
        same=$((same + 1))
        if [ "$same" -ge "$SETTLE" ]; then
            echo "rdma-vfs-ready: the count stays at $now of $WANT after ${waited}s; kubelet may start"
            exit 0
        fi
    else
        same=0
    fi
    previous=$now
    sleep "$EVERY"
    waited=$((waited + EVERY))
done
echo "rdma-vfs-ready: $(vfs) of $WANT RDMA virtual functions after ${LIMIT}s; kubelet may start anyway"
exit 0
