// SPDX-License-Identifier: GPL-2.0
/*
 * Benchmark build only (make VMWLCH_BENCH=1; scripts/bench-sched.sh), never
 * in the shipped module: times
 * the in-kernel cost of one decision of vmwlch and of wlc on the first
 * vmwlc/vmwlch service of the writer's namespace. The wlc loop is the one of
 * net/netfilter/ipvs/ip_vs_wlc.c (not callable from here), over the same
 * destinations. Softirq-like context: BH off, RCU read lock, like schedule().
 */

#include <linux/debugfs.h>
#include <linux/ktime.h>
#include <linux/sched.h>
#include <linux/uaccess.h>

#include "glue_net.h"

/* Plain wlc: the loop of net/netfilter/ipvs/ip_vs_wlc.c (not callable from here). */
static struct ip_vs_dest *vmwlch_wlc(struct ip_vs_service *svc)
{
	struct ip_vs_dest *dest, *least = NULL;
	int loh = 0, doh;

	list_for_each_entry_rcu(dest, &svc->destinations, n_list) {
		if (!(dest->flags & IP_VS_DEST_F_OVERLOAD) &&
		    atomic_read(&dest->weight) > 0) {
			least = dest;
			loh = ip_vs_dest_conn_overhead(least);
			goto nextstage;
		}
	}
	return NULL;
nextstage:
	list_for_each_entry_continue_rcu(dest, &svc->destinations, n_list) {
		if (dest->flags & IP_VS_DEST_F_OVERLOAD)
			continue;
		doh = ip_vs_dest_conn_overhead(dest);
		if ((__s64)loh * atomic_read(&dest->weight) >
		    (__s64)doh * atomic_read(&least->weight)) {
			least = dest;
			loh = doh;
		}
	}
	return least;
}

static struct dentry *vmwlch_bench_file;
/* The last result, whichever namespace's writer made it. */
static DEFINE_MUTEX(vmwlch_bench_out_lock);
static char vmwlch_bench_out[256];

/*
 * The same wlc loop as IPVS runs it: an out-of-line function with the
 * schedule() signature, called through a pointer like svc->scheduler->schedule.
 */
static noinline struct ip_vs_dest *
vmwlch_bench_wlc_entry(struct ip_vs_service *svc, const struct sk_buff *skb,
		       struct ip_vs_iphdr *iph)
{
	return vmwlch_wlc(svc);
}

typedef struct ip_vs_dest *(*vmwlch_bench_fn)(struct ip_vs_service *,
					       const struct sk_buff *,
					       struct ip_vs_iphdr *);
/* Read on every call, so that the calls stay indirect. */
static vmwlch_bench_fn vmwlch_bench_entry[2];

static ssize_t vmwlch_bench_write(struct file *f, const char __user *ubuf,
				  size_t len, loff_t *off)
{
	struct vmwlch_net *vn = vmwlch_net(current->nsproxy->net_ns);
	u64 t[4] = {}, t0, iters, i, hits = 0, chunk = 256;
	struct ip_vs_service *svc;
	unsigned int kind, pass;
	int ret, fallback;
	void *st;

	ret = kstrtou64_from_user(ubuf, len, 10, &iters);
	if (ret)
		return ret;
	if (!iters)
		return -EINVAL;
	mutex_lock(&vn->lock);
	st = vmwlch_state_locked(vn);
	svc = st ? vmwlch_rs_bench_svc(st) : NULL;
	if (!svc) {
		mutex_unlock(&vn->lock);
		return -ENOENT;
	}
	WRITE_ONCE(vmwlch_bench_entry[0], vmwlch_scheduler.schedule);
	WRITE_ONCE(vmwlch_bench_entry[1], vmwlch_bench_wlc_entry);
	/*
	 * Kinds: 0 = the selection called directly, 1 = the wlc loop inline,
	 * 2 = vmwlch's schedule() and 3 = wlc's, each called through a pointer
	 * as IPVS calls a scheduler (so 2 includes the glue: the per-netns
	 * state lookup and the decision counter). Whole passes, timed as a whole
	 * (the guest clock may be coarse), in the order w h h w, so that drift
	 * affects both alike. Chunks keep RCU read sections and BH-off periods
	 * short. Passes 0-3 warm each kind up (untimed): the first run of code
	 * under emulation includes translating it, and the VM may still be
	 * settling after the setup of the scenario.
	 */
	for (pass = 0; pass < 12; pass++) {
		kind = pass < 4 ? pass : (pass % 4 == 1 || pass % 4 == 2) ? 0 : 1;
		kind += pass >= 8 ? 2 : 0;
		t0 = ktime_get_ns();
		for (i = 0; i < iters; i += chunk) {
			u64 j, n = min(chunk, iters - i);

			local_bh_disable();
			rcu_read_lock();
			for (j = 0; j < n; j++) {
				if (kind == 0)
					hits += !!vmwlch_rs_schedule(st, svc, VMWLCH_KIND_VMWLCH,
								     vmwlch_seed(), vmwlch_conn_cost(svc),
								     &fallback);
				else if (kind == 1)
					hits += !!vmwlch_wlc(svc);
				else
					hits += !!READ_ONCE(vmwlch_bench_entry[kind - 2])(svc, NULL, NULL);
			}
			rcu_read_unlock();
			local_bh_enable();
			cond_resched();
		}
		if (pass >= 4)
			t[kind] += ktime_get_ns() - t0;
	}
	iters *= 2;
	mutex_unlock(&vn->lock);
	mutex_lock(&vmwlch_bench_out_lock);
	snprintf(vmwlch_bench_out, sizeof(vmwlch_bench_out),
		 "iterations=%llu vmwlch_ns=%llu wlc_ns=%llu vmwlch_call_ns=%llu wlc_call_ns=%llu hits=%llu\n",
		 iters, div64_u64(t[0], iters), div64_u64(t[1], iters),
		 div64_u64(t[2], iters), div64_u64(t[3], iters), hits);
	mutex_unlock(&vmwlch_bench_out_lock);
	return len;
}

static ssize_t vmwlch_bench_read(struct file *f, char __user *ubuf, size_t len,
				 loff_t *off)
{
	ssize_t ret;

	mutex_lock(&vmwlch_bench_out_lock);
	ret = simple_read_from_buffer(ubuf, len, off, vmwlch_bench_out,
				      strlen(vmwlch_bench_out));
	mutex_unlock(&vmwlch_bench_out_lock);
	return ret;
}

static const struct file_operations vmwlch_bench_fops = {
	.owner = THIS_MODULE,
	.write = vmwlch_bench_write,
	.read = vmwlch_bench_read,
};

void vmwlch_bench_init(void)
{
	vmwlch_bench_file = debugfs_create_file("vmwlch_bench", 0600, NULL,
						NULL, &vmwlch_bench_fops);
}

void vmwlch_bench_exit(void)
{
	debugfs_remove(vmwlch_bench_file);
}
