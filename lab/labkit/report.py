"""The lab's outputs: samples and summary files, the table, the self-check, the words."""
import json
import os
from .base import HNAMES, HOSTS, VMS, WEIGHT
from .stats import fmtv, mean, measured


class ReportMixin:
    def write_outputs(self, fo, elapsed):
        os.makedirs(self.a.out, exist_ok=True)
        for ph in self.phases:
            with open(os.path.join(self.a.out, f"samples-{ph.sched}.dat"), "w") as f:
                f.write("# t " + " ".join(f"load_{h}" for h in HNAMES) + " " +
                        " ".join(f"busy_{h}" for h in HNAMES) + " measured\n")
                for k, s in enumerate(ph.samples):
                    win = ph.samples[max(0, k - 2):k + 3]  # busy: 5-s centred moving average
                    f.write(f"{s['t']:.1f} " + " ".join(f"{s['wload'][h]:.2f}" for h in HNAMES) + " " +
                            " ".join(f"{100 * mean([x['util'][h] for x in win]):.1f}" for h in HNAMES) +
                            f" {1 if s['measured'] else 0}\n")
            if any(s.get("weights") for s in ph.samples):  # a load-feedback phase
                addrs = [v["addr"] for v in VMS]
                with open(os.path.join(self.a.out, f"weights-{ph.sched}.dat"), "w") as f:
                    f.write("# t " + " ".join(f"{v['name']}@{v['host']}" for v in VMS) + "\n")
                    for s in ph.samples:
                        if s.get("weights"):
                            f.write(f"{s['t']:.1f} " + " ".join(str(s["weights"].get(a, 0)) for a in addrs) + "\n")
        with open(os.path.join(self.a.out, "labels.gp"), "w") as f:  # for lab/plot.gp
            f.write(f'scheds = "{" ".join(ph.sched for ph in self.phases)}"\n')
            for ph in self.phases:
                r = getattr(ph, "result", None)
                if r:
                    f.write(f'title_{ph.sched} = "{ph.sched}: host imbalance {fmtv(r["imbalance_conns"], ".2f")}, '
                            f'sensor p95 {fmtv(r["sensor_p95_ms"], ".0f")} ms"\n')
        summ = dict(params=dict(vars(self.a)), work=self.work, calibration=self.calibration,
                    hosts=[dict(name=h, capacity=c, weight=w, vms=[v["name"] for v in VMS if v["host"] == h])
                           for h, c, w in HOSTS],
                    phases=[ph.result for ph in self.phases if hasattr(ph, "result")],
                    failover=fo, elapsed_s=round(elapsed, 1))
        summ["untrusted"] = self.self_check(summ)
        with open(os.path.join(self.a.out, "summary.json"), "w") as f:
            json.dump(summ, f, indent=1, default=str)
        return summ

    def table(self, summ):
        ps = summ["phases"]
        L = []
        w = 12
        L.append("")
        L += self.calibration_lines(summ)
        L.append("Results (measured window of each run; host load = active connections / host weight)")
        L.append(f"{'':34}" + "".join(f"{p['scheduler']:>{w}}" for p in ps))

        missing = []

        def row(label, key, fmt):
            for p in ps:
                if not measured(p.get(key)):
                    missing.append(f"  {label} under {p['scheduler']}: not measured (no {key.split('_')[0]}"
                                   " figure in the measured window)")
            L.append(f"{label:34}" + "".join(f"{fmt.format(p[key]) if measured(p.get(key)) else '-':>{w}}"
                                             for p in ps))
        row("host imbalance, conns (max/mean)", "imbalance_conns", "{:.2f}")
        row("host imbalance, busy (max/mean)", "imbalance_busy", "{:.2f}")
        row("busiest host, busy %", "max_busy", "{:.0%}")
        for h in HNAMES:
            L.append(f"{'  ' + h + f' (w{WEIGHT[h]}) active/W, busy %':34}" + "".join(
                f"{p['host_wload'][h]:>{w - 5}.1f}{p['host_busy'][h]:>5.0%}" for p in ps))
        row("sensor reading rt mean (ms)", "sensor_mean_ms", "{:.0f}")
        row("sensor reading rt p95 (ms)", "sensor_p95_ms", "{:.0f}")
        row("web request rt mean (ms)", "web_mean_ms", "{:.0f}")
        row("web request rt p95 (ms)", "web_p95_ms", "{:.0f}")
        row("sampler event-loop lag (ms/s)", "loop_lag_ms", "{:.0f}")
        row("load generator timer lag (ms)", "gen_lag_ms", "{:.1f}")
        L.append(f"{'requests measured (sensor/web)':34}" + "".join(
            f"{str(p['sensor_n']) + '/' + str(p['web_n']):>{w}}" for p in ps))
        L.append(f"{'errors (sensor/web)':34}" + "".join(
            f"{str(p['errors']['sensor']) + '/' + str(p['errors']['web']):>{w}}" for p in ps))
        L += missing
        fo = summ["failover"]
        if fo:
            L.append("")
            if fo.get("done") and not fo.get("error"):
                ms = lambda k: "n/a" if fo.get(k) is None else f"{fo[k]:.0f} ms"  # noqa: E731
                L.append(f"Failover (vmwlch, under load): fe1 killed -> VIP answering on fe2 (first SYN-ACK"
                         f" from fe2 at the client, kernel timestamp) in {ms('failover_ms')}")
                L.append("  fe2 became master: " + ", ".join(
                    f"{k} {v} ms" for k, v in sorted(fo.get("fe2_master_ms", {}).items())) +
                    " (keepalive's log)")
                L.append(f"  fe2's first gratuitous ARP at the client {ms('garp_ms')}; fe1's last advertisement on"
                         f" the wire {ms('last_advert_ms')} (cutting its links took {fo['cut_ms']:.0f} ms);"
                         f" from that last advertisement to the first SYN-ACK from fe2:"
                         f" {ms('failover_from_last_advert_ms')}")
            elif fo.get("error"):
                L.append(f"Failover: not measured ({fo['error']})")
            else:
                L.append("Failover: the VIP did not answer on fe2 within 15 s")
            if "sensors_kept" in fo:
                    L.append(f"  established sensor connections kept: {fo['sensors_kept']}/{fo['sensors_at_kill']}"
                         f" (fe2 held {fo['synced_on_backup']} synced entries before the kill); web sessions open"
                         f" at the kill: {fo['web_kept']} kept, {fo['web_lost']} lost, the rest ended normally;"
                         f" new connections a second after the failover settled: {fo['probes_after_ok']}/"
                         f"{fo['probes_after']}" + (f" (failed: {', '.join(fo['probes_after_errors'])})"
                                                    if fo.get("probes_after_errors") else ""))
        L += self.feedback_lines(summ)
        L.append("")
        L += self.words(summ)
        L.append("")
        bad = summ.get("untrusted") or []
        L.append("Self-check: the lab's own health was good; the figures can be trusted." if not bad else
                 "Self-check: this run CANNOT be trusted - " + "; ".join(bad) + ".")
        return "\n".join(L)

    def feedback_lines(self, summ):
        """The stock-kernel load feedback phase and its scenarios (lab/labkit/feedback.py)."""
        L = []
        for p in summ["phases"]:
            if "fb_steady_writes" not in p:
                continue
            L.append("")
            L.append(f"Load feedback, stock-kernel mode ({p['scheduler']}: wlc, destination weights scaled by"
                     " the host agents' CPU reports and by the director's connections per host; the module"
                     " not used): host imbalance"
                     f" {fmtv(p['imbalance_conns'], '.2f')}; at most {fmtv(p['fb_steady_writes'], '.1f')}"
                     " weight change(s) per destination per 10 s over the measured window")
            f = p.get("feedback")
            if not f:
                continue
            L.append(f"  CPU antagonist on {f['antagonist_host']}: its VMs' weight {f['weight_before']:.0f} ->"
                     f" {f['weight_under']:.0f} (the other VMs' {f['others_before']:.0f} -> {f['others_under']:.0f})"
                     + (f", halved in {f['moved_off_s']:.1f} s" if f["moved_off"] else ", NOT halved within 30 s")
                     + f"; then {f['steady_window_s']:.0f} s steady: at most {f['steady_max_writes']} write(s) per"
                     " destination")
            L.append(f"  VM {f['moved_vm']} moved to {f['moved_to']} (veth and the agents' VM files): its weight"
                     f" {f['vm_weight_before']} -> {f['vm_weight_after']}"
                     + (f" {f['follow_ms']} ms after the files changed" if f["followed"] else ", NOT followed in 10 s")
                     + ("; all within the bounds (30 s, 1 write per 10 s, 2 s)" if f["ok"] else
                        "; OUTSIDE the bounds (30 s, 1 write per 10 s, 2 s)"))
        return L

    def calibration_lines(self, summ):
        c, p = summ.get("calibration"), summ["params"]
        if not c:
            return ["Calibration: not measured (the lab stopped before its probe ended)", ""]
        L = []
        probes = [("small probe", c.get("small"))] + [("load probe", x) for x in c.get("probes") or []]
        for what, x in probes:
            if x is None:
                continue
            L.append(f"Calibration, {what} ({x['sensors']} sensors, {x['web_users']} web users): {x['opened']}"
                     f" connected in {x['open_s']:.1f} s; {x['requests']} requests in {x['seconds']:.0f} s;"
                     + (f" VM busy {100 * x['idle_busy']:.0f}% idle," if x.get("idle_busy") is not None else " VM")
                     + f" {100 * x['busy']:.0f}% busy loaded; generator timer"
                     f" lag {fmtv(x['gen_lag_ms'], '.1f', 'no timer report')} ms")
        if c.get("asked"):
            L.append(f"  Scaled down to this VM ({c['why']}): {p['sensors']} sensors and {p['web_users']} web users"
                     f" instead of {c['asked']['sensors']} and {c['asked']['web_users']}; the work per request grew"
                     " to keep the target load")
        elif c.get("why"):
            L.append(f"  The VM was short even for the small probe ({c['why']}): counts kept as asked")
        if c.get("advert_ms", 100) != 100:
            L.append(f"  VRRP adverts every {c['advert_ms']} ms instead of 100: this VM's timers ran late, and a"
                     " stall longer than the master-down interval would fail over with no fault")
        L.append("")
        return L

    def self_check(self, summ):
        """Reasons, in plain words, why the lab's figures are artefacts (empty: trusted)."""
        a, why = self.a, []
        for p in summ["phases"]:
            n = p["scheduler"]
            if p["sensors_open_at_measure"] < a.sensors:
                why.append(f"under {n} only {p['sensors_open_at_measure']} of {a.sensors} sensors were connected"
                           " when the measurement began")
            if p["connect_timeouts"]:
                why.append(f"under {n} {p['connect_timeouts']} connections never opened (connect timed out)")
            # half a second late on average is a tenth of a sensor period and of the
            # order of the response times measured: below that the figures hold
            if measured(p["gen_lag_ms"]) and p["gen_lag_ms"] > 500:
                why.append(f"under {n} the load generator's timers ran {p['gen_lag_ms']:.0f} ms late on average"
                           " (it was short of CPU)")
            if p["loop_lag_ms"] > 500:
                why.append(f"under {n} the sampler ran {p['loop_lag_ms']:.0f} ms late per second")
            if not p["sensor_n"] or not p["web_n"]:
                why.append(f"under {n} a service had no answered request in the measured window")
        if len(summ["phases"]) < len(a.schedulers):
            why.append("not every scheduler was measured")
        fo = summ.get("failover")
        if fo and fo.get("error"):
            why.append(f"the failover was not measured ({fo['error']})")
        return why

    def words(self, summ):
        by = {p["scheduler"]: p for p in summ["phases"]}
        W = ["What the numbers show:"]
        if "wlc" in by and "vmwlch" in by:
            a, b = by["wlc"], by["vmwlch"]
            if not all(measured(x[k]) for x in (a, b) for k in ("imbalance_conns", "max_busy", "sensor_mean_ms",
                                                                    "sensor_p95_ms", "web_mean_ms", "web_p95_ms")):
                W.append("- Host balance and response times: not measured (a phase had no samples or no"
                         " answered request; see the self-check below)")
                return W
            better = b["imbalance_conns"] < a["imbalance_conns"]
            W.append(f"- Host balance: the busiest host carried {a['imbalance_conns']:.2f}x the mean weighted load"
                     f" under wlc and {b['imbalance_conns']:.2f}x under vmwlch"
                     + (f" ({fmtv(by['vmwlc']['imbalance_conns'], '.2f')}x under vmwlc)" if "vmwlc" in by else "")
                     + ". "
                     + ("vmwlch keeps the physical hosts more even: it counts every service's connections per"
                        " host and the host weights, so sensors go to the fast hosts and away from the hosts"
                        " that carry the web VMs." if better else
                        "vmwlch did NOT come out more even than wlc in this run; see docs/demo.md"
                        " (\"When vmwlch does not win\") for what to check."))
            W.append(f"- Busy time follows: the busiest host was busy {a['max_busy']:.0%} of the time under wlc,"
                     f" {b['max_busy']:.0%} under vmwlch; sensor readings took {a['sensor_mean_ms']:.0f} ms"
                     f" (p95 {a['sensor_p95_ms']:.0f}) vs {b['sensor_mean_ms']:.0f} ms (p95"
                     f" {b['sensor_p95_ms']:.0f}), web requests {a['web_mean_ms']:.0f} ms (p95"
                     f" {a['web_p95_ms']:.0f}) vs {b['web_mean_ms']:.0f} ms (p95 {b['web_p95_ms']:.0f}).")
            la, lb = a.get("gen_lag_ms"), b.get("gen_lag_ms")
            if measured(la) and measured(lb) and max(la, lb) > 100 and max(la, lb) > 2 * min(la, lb):
                W.append(f"  Response times are NOT comparable in this run: the load generator's timers ran"
                         f" {la:.0f} ms late under wlc and {lb:.0f} ms under vmwlch (the VM was short of CPU"
                         " in one phase, and a late client inflates every time it measures); host balance"
                         " is not affected.")
            else:
                W.append("  (Response times include the emulated VM's own network latency and the Rust"
                         " clients' and servers' scheduling delays, about the same for every scheduler in"
                         " this run.)")
            lag = max(p["loop_lag_ms"] for p in summ["phases"])
            if lag > 200:
                W.append(f"  Note: the VM was short of CPU in this run (the client's event loop ran up to"
                         f" {lag:.0f} ms late per second on average; other VMs on this machine?): response"
                         " times are inflated and noisier; host balance is not affected.")
        fb = by.get("wlc_fb")
        if fb and "wlc" in by and all(measured(by[k]["imbalance_conns"]) for k in ("wlc", "wlc_fb")):
            W.append(f"- On a kernel without the module, wlc with the load feedback's weights reached host"
                     f" imbalance {fb['imbalance_conns']:.2f}x (plain wlc {by['wlc']['imbalance_conns']:.2f}x"
                     + (f", vmwlch {by['vmwlch']['imbalance_conns']:.2f}x" if "vmwlch" in by
                        and measured(by["vmwlch"]["imbalance_conns"]) else "")
                     + "): the director sums its own connections of both services per host and scales each"
                     " host's destination weights until those sums follow the host weights (which the"
                     " agents' CPU reports lower on a host that loses capacity).")
        fo = summ["failover"]
        if fo and fo.get("done") and not fo.get("error") and fo.get("failover_ms") is not None:
            allkept = fo["sensors_kept"] == fo["sensors_at_kill"] and fo["web_lost"] == 0
            W.append(f"- Failover: the standby answered new connections {fo['failover_ms']:.0f} ms after"
                     f" the active front end died, and {fo['sensors_kept']} of {fo['sensors_at_kill']} established"
                     f" sensor connections {'all ' if allkept else ''}kept working through it"
                     " (the standby had them from the IPVS sync daemon).")
        elif fo and fo.get("error"):
            W.append(f"- Failover: not measured ({fo['error']}).")
        elif fo:
            W.append("- Failover: the standby did not take over within the bound; see the keepalive logs.")
        return W


