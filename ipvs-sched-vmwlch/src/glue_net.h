/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Internal to the C side (glue.c, and bench.c in the benchmark build): the
 * per-namespace data and the tie-breaking sequence. Not part of the C/Rust
 * boundary (that is glue.h).
 */
#ifndef VMWLCH_GLUE_NET_H
#define VMWLCH_GLUE_NET_H

#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/workqueue.h>
#include <net/ip_vs.h>
#include <net/netns/generic.h>

#include "glue.h"

struct vmwlch_net {
	struct mutex lock;	/* writers of state (see the top of glue.c) */
	void __rcu *state;
	void *dying;		/* state between unpublishing and freeing (exit) */
	struct vmwlch_counters __percpu *stats;
	/* Coalesced snapshot rebuilds and retries (src/pace.rs). */
	struct delayed_work rebuild;
};

extern unsigned int vmwlch_net_id;
extern struct ip_vs_scheduler vmwlch_scheduler;

static inline struct vmwlch_net *vmwlch_net(struct net *net)
{
	return net_generic(net, vmwlch_net_id);
}

static inline void *vmwlch_state_locked(struct vmwlch_net *vn)
{
	return rcu_dereference_protected(vn->state, lockdep_is_held(&vn->lock));
}

/*
 * Tie-breaking randomness, not a secret: a per-CPU Weyl sequence (seeded
 * randomly at load) whose next value each decision takes as its seed; the
 * Rust side mixes it (SplitMix64) only if the decision has a tie.
 */
#define VMWLCH_WEYL 0x9e3779b97f4a7c15ULL
DECLARE_PER_CPU(u64, vmwlch_seq);

static inline u64 vmwlch_seed(void)
{
	return this_cpu_add_return(vmwlch_seq, VMWLCH_WEYL);
}

/*
 * What a new connection adds to its destination's overhead
 * (activeconns * 256 + the second term, see layout.c) by the next decision:
 * IPVS counts a TCP or SCTP connection inactive until it is established
 * (the state change right after scheduling), others active; the second
 * term counts it either way where it is totalconns.
 */
#ifdef VMWLCH_HAVE_TOTALCONNS
#define VMWLCH_COST_ACTIVE 257
#else
#define VMWLCH_COST_ACTIVE 256
#endif
static inline u32 vmwlch_conn_cost(const struct ip_vs_service *svc)
{
	return svc->protocol == IPPROTO_TCP || svc->protocol == IPPROTO_SCTP ?
		1 : VMWLCH_COST_ACTIVE;
}

/* The benchmark build's debugfs timer (bench.c, make VMWLCH_BENCH=1). */
#ifdef VMWLCH_BENCH
void vmwlch_bench_init(void);
void vmwlch_bench_exit(void);
#else
static inline void vmwlch_bench_init(void) {}
static inline void vmwlch_bench_exit(void) {}
#endif

#endif /* VMWLCH_GLUE_NET_H */
