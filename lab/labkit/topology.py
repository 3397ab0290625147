"""The lab's network: namespaces, veth pairs and bridges, built and removed in batches."""
import os
import subprocess
from .base import AGENT_ADDR, FE, GW, HNAMES, LabError, NS_BR, NS_CL, VMS, log, run, write

# ---------------------------------------------------------------- topology

def build_topology(tmp):
    # Namespaces inherit these from the VM's own (private) root namespace:
    # forwarding, ARP answered only on the asked interface, no IPv6 chatter.
    write("/proc/sys/net/core/devconf_inherit_init_net", 1)
    for scope in ("all", "default"):
        write(f"/proc/sys/net/ipv6/conf/{scope}/disable_ipv6", 1)
        write(f"/proc/sys/net/ipv4/conf/{scope}/forwarding", 1)
        write(f"/proc/sys/net/ipv4/conf/{scope}/arp_ignore", 1)
    names = [NS_BR, NS_CL, FE[1], FE[2]] + [f"lab-{h}" for h in HNAMES] + [v["ns"] for v in VMS]
    root = [f"netns add {n}" for n in names]
    root.append(f"link add eth0 netns {NS_CL} type veth peer name pc netns {NS_BR}")
    for i in (1, 2):
        root.append(f"link add eth0 netns {FE[i]} type veth peer name pf{i} netns {NS_BR}")
        root.append(f"link add eth1 netns {FE[i]} type veth peer name qf{i} netns {NS_BR}")
    for h in HNAMES:
        root.append(f"link add uplink netns lab-{h} type veth peer name q{h} netns {NS_BR}")
    for v in VMS:
        root.append(f"link add eth0 netns {v['ns']} type veth peer name {v['name']} netns lab-{v['host']}")
    per = {}
    br = ["link set lo up", "link add br0 type bridge", "link add br1 type bridge",
          "link set br0 up", "link set br1 up", "link set pc master br0 up"]
    for i in (1, 2):
        br += [f"link set pf{i} master br0 up", f"link set qf{i} master br1 up"]
    br += [f"link set q{h} master br1 up" for h in HNAMES]
    per[NS_BR] = br
    per[NS_CL] = ["link set lo up", "addr add 192.0.2.200/24 dev eth0", "link set eth0 up"]
    for i in (1, 2):
        per[FE[i]] = ["link set lo up", f"addr add 192.0.2.{i}/24 dev eth0", f"addr add 10.1.0.{i}/16 dev eth1",
                      "link set eth0 up", "link set eth1 up"]
    for i, h in enumerate(HNAMES, 1):
        # A set address: a bridge otherwise takes its lowest port's, so a VM
        # moved in (its veth) could change it under the agent's address.
        per[f"lab-{h}"] = ["link set lo up", "link add hbr type bridge",
                           f"link set hbr address 02:00:0a:01:{i:02x}:01", "link set hbr up",
                           f"addr add {AGENT_ADDR[h]}/16 dev hbr", "link set uplink master hbr up"] + \
                          [f"link set {v['name']} master hbr up" for v in VMS if v["host"] == h]
    for v in VMS:
        per[v["ns"]] = ["link set lo up", f"addr add {v['addr']}/16 dev eth0", "link set eth0 up",
                        f"route add default via {GW}"]
    path = os.path.join(tmp, "root.batch")
    write(path, "\n".join(root) + "\n")
    run(["ip", "-batch", path], timeout=120)
    procs = []
    for ns, lines in per.items():
        p = os.path.join(tmp, f"{ns}.batch")
        write(p, "\n".join(lines) + "\n")
        procs.append((ns, subprocess.Popen(["ip", "-n", ns, "-batch", p], stdout=subprocess.DEVNULL,
                                           stderr=subprocess.PIPE, text=True)))
    for ns, p in procs:
        try:
            _, err = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            raise LabError(f"configuring {ns}: no answer in 120 s")
        if p.returncode != 0:
            raise LabError(f"configuring {ns} failed: {err.strip()[:300]}")


def delete_topology():
    """Remove the lab's namespaces (one exec: `ip -batch`)."""
    names = [n for n in (os.listdir("/run/netns") if os.path.isdir("/run/netns") else []) if n.startswith("lab-")]
    if names:
        try:
            subprocess.run(["ip", "-force", "-batch", "-"], input="".join(f"netns del {n}\n" for n in names),
                           capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            log("warning: removing the lab's namespaces timed out")

