/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The seam between the C glue (glue.c) and the Rust side (vmwlch.rs).
 *
 * C owns what Rust-for-Linux cannot express on 6.12: the struct
 * ip_vs_scheduler statics, the generic netlink family with its policy, the
 * pernet registration, and accessors for static inlines and RCU list walks.
 * Rust owns the state, the host map, validation and the selection.
 *
 * "state" below is an opaque pointer to a Rust-owned per-netns NetState.
 *
 * This header is the one contract: glue.c is compiled against it, and Kbuild
 * runs bindgen on it (src/glue_sys.rs) for the Rust side, which calls the C
 * functions through those declarations and checks its own definitions
 * against them at compile time (ffi.rs). The struct names are the C names,
 * so that kCFI type ids agree across the boundary.
 */
#ifndef VMWLCH_GLUE_H
#define VMWLCH_GLUE_H

#include <linux/types.h>

struct ip_vs_service;
struct ip_vs_dest;
struct sk_buff;

/* Scheduler kinds, passed to Rust. */
#define VMWLCH_KIND_VMWLC	0	/* host stage over the service's own load */
#define VMWLCH_KIND_VMWLCH	1	/* host stage over all services' load */

/* Per-CPU decision counters (summed for GET_INFO; struct RawCounters in ffi.rs). */
struct vmwlch_counters {
	u64 decisions;
	u64 no_dest;
	u64 fallback;	/* decided by plain wlc: the snapshot was not current */
};

/* ---- implemented in Rust (vmwlch.rs) ---- */
/* vn: the glue's per-namespace data, passed back to vmwlch_queue_rebuild(). */
void *vmwlch_rs_net_new(void *vn);
void vmwlch_rs_net_free(void *state);
int vmwlch_rs_init_service(void *state, struct ip_vs_service *svc, int kind);
void vmwlch_rs_done_service(void *state, struct ip_vs_service *svc);
void vmwlch_rs_add_dest(void *state, struct ip_vs_service *svc,
			struct ip_vs_dest *dest);
void vmwlch_rs_del_dest(void *state, struct ip_vs_service *svc,
			struct ip_vs_dest *dest);
void vmwlch_rs_upd_dest(void *state, struct ip_vs_service *svc,
			struct ip_vs_dest *dest);
/* state may be NULL (namespace going away). Decides by plain wlc over the
 * service's own destinations, and sets *fallback, when the snapshot is not
 * current (or there is no state): never "no destination" for lack of one. */
struct ip_vs_dest *vmwlch_rs_schedule(void *state, struct ip_vs_service *svc,
				       int kind, u64 seed, u32 cost, int *fallback);
/* The rebuild work item's body (the namespace's lock held, process context). */
void vmwlch_rs_rebuild_work(void *state);
/* A netlink do-command: the attribute stream of the request (already
 * validated against the command's policy); GET_HOST and GET_INFO fill
 * reply (NULL for the others; counters: the summed decision counters).
 * Returns 0 or -errno; on error *msg is a static message and *bad_off the
 * offset of the offending attribute in the stream, or -1. */
int vmwlch_rs_do(void *state, u8 cmd, const void *attrs, int len,
		 struct sk_buff *reply, u32 portid, u32 seq,
		 const struct vmwlch_counters *counters, const char **msg,
		 int *bad_off);
/* Every host's figures for one part of a GET_HOST dump, built under the
 * lock for the state as it is (NULL: out of memory); freed before the lock
 * is dropped. */
void *vmwlch_rs_dump_index(void *state);
void vmwlch_rs_dump_index_free(void *index);
/* Fill one message for host idx starting at member *member_off, from index;
 * returns 0 when the host is complete, 1 when the skb filled up mid-host
 * (continue at *member_off), -ENOENT past the last host, -EMSGSIZE if
 * nothing fit. */
int vmwlch_rs_fill_host(void *state, void *index, u32 idx, u32 *member_off,
			struct sk_buff *skb, u32 portid, u32 seq, int flags);
/* The generation of the map and the tracked set (moves on every change). */
u32 vmwlch_rs_generation(void *state);
/* First tracked service (benchmark build only). */
struct ip_vs_service *vmwlch_rs_bench_svc(void *state);

/* ---- implemented in C (glue.c), called from Rust ---- */
/* Walk svc->destinations (caller holds the IPVS config mutex). */
int vmwlch_svc_walk(struct ip_vs_service *svc,
		    int (*cb)(void *ctx, struct ip_vs_dest *dest), void *ctx);
/* The same, under rcu_read_lock() (cb must not sleep). */
int vmwlch_svc_walk_rcu(struct ip_vs_service *svc,
			int (*cb)(void *ctx, struct ip_vs_dest *dest), void *ctx);
/*
 * A snapshot's per-CPU host loads (host_cache.rs): size bytes per CPU,
 * zeroed, charged to the caller's memory cgroup; NULL if that cannot be had
 * (larger than a per-CPU unit, or out of memory). Freeing may happen in
 * atomic context (an RCU callback).
 */
void *vmwlch_cpu_cache_alloc(size_t size);
void vmwlch_cpu_cache_free(void *cache);
/* This CPU's copy; preemption stays disabled until vmwlch_cpu_cache_put(). */
void *vmwlch_cpu_cache_get(void *cache);
void vmwlch_cpu_cache_put(void);
/* The tick of the host load caches. */
unsigned long vmwlch_jiffies(void);
/* Run the namespace's snapshot rebuild in delay jiffies (a queued one is moved). */
void vmwlch_queue_rebuild(void *vn, unsigned long delay);

/* Module setup and teardown, called from the Rust module's init and drop. */
int vmwlch_glue_init(void);
void vmwlch_glue_exit(void);

void *vmwlch_msg_put(struct sk_buff *skb, u32 portid, u32 seq, int flags,
		     u8 cmd);
void vmwlch_msg_end(struct sk_buff *skb, void *hdr);
void vmwlch_msg_cancel(struct sk_buff *skb, void *hdr);
int vmwlch_put_u32(struct sk_buff *skb, int type, u32 value);
int vmwlch_put_u64(struct sk_buff *skb, int type, u64 value);
int vmwlch_put_bytes(struct sk_buff *skb, int type, const void *data, int len);
void *vmwlch_nest_start(struct sk_buff *skb, int type);
void vmwlch_nest_end(struct sk_buff *skb, void *nest);

#endif /* VMWLCH_GLUE_H */
