// SPDX-License-Identifier: GPL-2.0
/*
 * C glue of ip_vs_vmwlch: scheduler statics, pernet registration, the VMWLCH
 * generic netlink family and accessors for static inlines. Everything with
 * a decision in it lives in Rust (vmwlch.rs); keep this file boring.
 *
 * Locking: each namespace's lock (vmwlch_net.lock) serialises every writer
 * of that namespace's Rust state (IPVS scheduler callbacks, which already
 * hold the IPVS config mutex, the netlink commands and the rebuild work);
 * namespaces do not wait for each other. schedule() runs
 * under rcu_read_lock() in softirq or process context and only reads the
 * RCU-published snapshot, or the service's own list (plain wlc) while the
 * snapshot is not current.
 */

#define KMSG_COMPONENT "IPVS"
#define pr_fmt(fmt) KMSG_COMPONENT ": " fmt

#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/random.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/workqueue.h>
#include <linux/completion.h>
#include <net/genetlink.h>
#include <net/ip_vs.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>

#include "../include/uapi/linux/vmwlch.h"
#include "glue.h"

static unsigned int vmwlch_net_id __read_mostly;

struct vmwlch_net {
	struct mutex lock;	/* writers of state (see the top of the file) */
	void __rcu *state;
	void *dying;		/* state between unpublishing and freeing (exit) */
	struct vmwlch_counters __percpu *stats;
	/* Coalesced snapshot rebuilds and retries (src/pace.rs). */
	struct delayed_work rebuild;
};

/*
 * Tie-breaking randomness, not a secret: a per-CPU Weyl sequence (seeded
 * randomly at load) whose next value each decision takes as its seed; the
 * Rust side mixes it (SplitMix64) only if the decision has a tie.
 */
#define VMWLCH_WEYL 0x9e3779b97f4a7c15ULL
static DEFINE_PER_CPU(u64, vmwlch_seq);

static struct vmwlch_net *vmwlch_net(struct net *net)
{
	return net_generic(net, vmwlch_net_id);
}

static void *vmwlch_state_locked(struct net *net)
{
	struct vmwlch_net *vn = vmwlch_net(net);

	return rcu_dereference_protected(vn->state, lockdep_is_held(&vn->lock));
}

/* ---- accessors for Rust ---- */

void vmwlch_dest_live(const struct ip_vs_dest *dest, struct vmwlch_live *out)
{
	int active = atomic_read(&dest->activeconns);

	out->weight = atomic_read(&dest->weight);
	out->activeconns = active;
	out->flags = READ_ONCE(dest->flags);
#ifdef VMWLCH_HAVE_TOTALCONNS
	/* Since the totalconns change, wlc's overhead is active*256 + total. */
	out->overhead_term = atomic_read(&dest->totalconns);
	out->inactconns = max(out->overhead_term - active, 0);
#else
	out->inactconns = atomic_read(&dest->inactconns);
	out->overhead_term = out->inactconns;
#endif
}

u16 vmwlch_dest_addr(const struct ip_vs_dest *dest, u8 *out16)
{
	memset(out16, 0, 16);
	if (dest->af == AF_INET6)
		memcpy(out16, &dest->addr.in6, 16);
	else
		memcpy(out16, &dest->addr.ip, 4);
	return dest->af;
}

int vmwlch_svc_walk(struct ip_vs_service *svc,
		    int (*cb)(void *ctx, struct ip_vs_dest *dest), void *ctx)
{
	struct ip_vs_dest *dest;
	int ret;

	list_for_each_entry(dest, &svc->destinations, n_list) {
		ret = cb(ctx, dest);
		if (ret)
			return ret;
	}
	return 0;
}

int vmwlch_svc_walk_rcu(struct ip_vs_service *svc,
			int (*cb)(void *ctx, struct ip_vs_dest *dest), void *ctx)
{
	struct ip_vs_dest *dest;
	int ret = 0;

	rcu_read_lock();
	list_for_each_entry_rcu(dest, &svc->destinations, n_list) {
		ret = cb(ctx, dest);
		if (ret)
			break;
	}
	rcu_read_unlock();
	return ret;
}

unsigned long vmwlch_svc_slot(const struct ip_vs_service *svc)
{
	return (unsigned long)svc->sched_data;
}

void vmwlch_svc_set_slot(struct ip_vs_service *svc, unsigned long slot)
{
	svc->sched_data = (void *)slot;
}

void vmwlch_queue_rebuild(void *vn, unsigned long delay)
{
	struct vmwlch_net *n = vn;

	queue_delayed_work(system_unbound_wq, &n->rebuild, delay);
}

static void vmwlch_rebuild_fn(struct work_struct *work)
{
	struct vmwlch_net *vn = container_of(to_delayed_work(work),
					     struct vmwlch_net, rebuild);
	void *st;

	mutex_lock(&vn->lock);
	/* NULL once the namespace is going away (then nothing requeues us). */
	st = rcu_dereference_protected(vn->state, lockdep_is_held(&vn->lock));
	if (st)
		vmwlch_rs_rebuild_work(st);
	mutex_unlock(&vn->lock);
}

void vmwlch_retire(struct rcu_head *head)
{
	call_rcu(head, vmwlch_rs_snapshot_free);
}

void vmwlch_msg_end(struct sk_buff *skb, void *hdr)
{
	genlmsg_end(skb, hdr);
}

void vmwlch_msg_cancel(struct sk_buff *skb, void *hdr)
{
	genlmsg_cancel(skb, hdr);
}

int vmwlch_put_u32(struct sk_buff *skb, int type, u32 value)
{
	return nla_put_u32(skb, type, value);
}

int vmwlch_put_u64(struct sk_buff *skb, int type, u64 value)
{
	return nla_put_u64_64bit(skb, type, value, VMWLCH_A_PAD);
}

int vmwlch_put_bytes(struct sk_buff *skb, int type, const void *data, int len)
{
	return nla_put(skb, type, len, data);
}

void *vmwlch_nest_start(struct sk_buff *skb, int type)
{
	return nla_nest_start(skb, type);
}

void vmwlch_nest_end(struct sk_buff *skb, void *nest)
{
	nla_nest_end(skb, nest);
}

/* ---- schedulers ---- */

static int vmwlch_init_common(struct ip_vs_service *svc, int kind)
{
	struct vmwlch_net *vn = vmwlch_net(svc->ipvs->net);
	void *st;
	int ret = -ENODEV;

	mutex_lock(&vn->lock);
	st = vmwlch_state_locked(svc->ipvs->net);
	if (st)
		ret = vmwlch_rs_init_service(st, svc, kind);
	mutex_unlock(&vn->lock);
	return ret;
}

static int vmwlc_init_svc(struct ip_vs_service *svc)
{
	return vmwlch_init_common(svc, VMWLCH_KIND_VMWLC);
}

static int vmwlch_init_svc(struct ip_vs_service *svc)
{
	return vmwlch_init_common(svc, VMWLCH_KIND_VMWLCH);
}

static void vmwlch_done_svc(struct ip_vs_service *svc)
{
	struct vmwlch_net *vn = vmwlch_net(svc->ipvs->net);
	void *st;

	mutex_lock(&vn->lock);
	/* NULL once the namespace's state is gone (netns teardown order). */
	st = vmwlch_state_locked(svc->ipvs->net);
	if (st)
		vmwlch_rs_done_service(st, svc);
	mutex_unlock(&vn->lock);
}

/* A destination callback: the Rust side's handler under the namespace's lock. */
static int vmwlch_dest_event(struct ip_vs_service *svc, struct ip_vs_dest *dest,
			     void (*handler)(void *, struct ip_vs_service *,
					     struct ip_vs_dest *))
{
	struct vmwlch_net *vn = vmwlch_net(svc->ipvs->net);
	void *st;

	mutex_lock(&vn->lock);
	st = vmwlch_state_locked(svc->ipvs->net);
	if (st)
		handler(st, svc, dest);
	mutex_unlock(&vn->lock);
	return 0;
}

static int vmwlch_add_dest(struct ip_vs_service *svc, struct ip_vs_dest *dest)
{
	return vmwlch_dest_event(svc, dest, vmwlch_rs_add_dest);
}

static int vmwlch_del_dest(struct ip_vs_service *svc, struct ip_vs_dest *dest)
{
	return vmwlch_dest_event(svc, dest, vmwlch_rs_del_dest);
}

/*
 * A weight edit: the snapshot leaves hosts without a weighted destination
 * of a service out of that service's view, so it is rebuilt.
 */
static int vmwlch_upd_dest(struct ip_vs_service *svc, struct ip_vs_dest *dest)
{
	return vmwlch_dest_event(svc, dest, vmwlch_rs_upd_dest);
}

/*
 * Plain wlc over the service's own destinations: the loop of
 * net/netfilter/ipvs/ip_vs_wlc.c (not callable from a module). Decisions
 * use it while the snapshot is not current (src/pace.rs): the short window
 * between a change of the tracked set and the rebuild, or after a rebuild
 * that ran out of memory. Under rcu_read_lock(), like schedule().
 */
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

/* The seed of one decision's tie-breaking (see vmwlch_seq). */
static inline u64 vmwlch_seed(void)
{
	return this_cpu_add_return(vmwlch_seq, VMWLCH_WEYL);
}

static struct ip_vs_dest *vmwlch_schedule_common(struct ip_vs_service *svc,
						 int kind)
{
	struct vmwlch_net *vn = net_generic(svc->ipvs->net, vmwlch_net_id);
	struct ip_vs_dest *dest = NULL;
	int stale = 1;
	void *st;

	st = rcu_dereference(vn->state);
	if (st)
		dest = vmwlch_rs_schedule(st, svc, kind, vmwlch_seed(), &stale);
	if (stale) {
		/* No current snapshot: never refuse for lack of one. */
		dest = vmwlch_wlc(svc);
		this_cpu_inc(vn->stats->fallback);
	}
	if (!dest) {
		this_cpu_inc(vn->stats->no_dest);
		ip_vs_scheduler_err(svc, "no destination available");
	} else {
		this_cpu_inc(vn->stats->decisions);
	}
	return dest;
}

static struct ip_vs_dest *vmwlc_schedule(struct ip_vs_service *svc,
					 const struct sk_buff *skb,
					 struct ip_vs_iphdr *iph)
{
	return vmwlch_schedule_common(svc, VMWLCH_KIND_VMWLC);
}

static struct ip_vs_dest *vmwlch_schedule(struct ip_vs_service *svc,
					  const struct sk_buff *skb,
					  struct ip_vs_iphdr *iph)
{
	return vmwlch_schedule_common(svc, VMWLCH_KIND_VMWLCH);
}

static struct ip_vs_scheduler vmwlc_scheduler = {
	.name =		"vmwlc",
	.refcnt =	ATOMIC_INIT(0),
	.module =	THIS_MODULE,
	.n_list =	LIST_HEAD_INIT(vmwlc_scheduler.n_list),
	.init_service =	vmwlc_init_svc,
	.done_service =	vmwlch_done_svc,
	.add_dest =	vmwlch_add_dest,
	.del_dest =	vmwlch_del_dest,
	.upd_dest =	vmwlch_upd_dest,
	.schedule =	vmwlc_schedule,
};

static struct ip_vs_scheduler vmwlch_scheduler = {
	.name =		"vmwlch",
	.refcnt =	ATOMIC_INIT(0),
	.module =	THIS_MODULE,
	.n_list =	LIST_HEAD_INIT(vmwlch_scheduler.n_list),
	.init_service =	vmwlch_init_svc,
	.done_service =	vmwlch_done_svc,
	.add_dest =	vmwlch_add_dest,
	.del_dest =	vmwlch_del_dest,
	.upd_dest =	vmwlch_upd_dest,
	.schedule =	vmwlch_schedule,
};

/* ---- per network namespace state ---- */

static int __net_init vmwlch_net_init(struct net *net)
{
	struct vmwlch_net *vn = net_generic(net, vmwlch_net_id);
	void *st;

	vn->stats = alloc_percpu(struct vmwlch_counters);
	if (!vn->stats)
		return -ENOMEM;
	mutex_init(&vn->lock);
	INIT_DELAYED_WORK(&vn->rebuild, vmwlch_rebuild_fn);
	st = vmwlch_rs_net_new(vn);
	if (!st) {
		free_percpu(vn->stats);
		return -ENOMEM;
	}
	mutex_lock(&vn->lock);
	rcu_assign_pointer(vn->state, st);
	mutex_unlock(&vn->lock);
	return 0;
}

/*
 * Namespaces die in batches (cleanup_net): one grace period for the whole
 * batch, not one per namespace.
 */
static void __net_exit vmwlch_net_exit_batch(struct list_head *net_list)
{
	struct net *net;

	list_for_each_entry(net, net_list, exit_list) {
		struct vmwlch_net *vn = vmwlch_net(net);

		mutex_lock(&vn->lock);
		vn->dying = vmwlch_state_locked(net);
		RCU_INIT_POINTER(vn->state, NULL);
		mutex_unlock(&vn->lock);
		/* With the state unreachable, nothing queues the work again. */
		cancel_delayed_work_sync(&vn->rebuild);
	}
	synchronize_rcu();	/* no schedule() sees any of these states now */
	list_for_each_entry(net, net_list, exit_list) {
		struct vmwlch_net *vn = vmwlch_net(net);

		if (vn->dying)
			vmwlch_rs_net_free(vn->dying);
		free_percpu(vn->stats);
	}
}

static struct pernet_operations vmwlch_net_ops = {
	.init = vmwlch_net_init,
	.exit_batch = vmwlch_net_exit_batch,
	.id = &vmwlch_net_id,
	.size = sizeof(struct vmwlch_net),
};

/* ---- generic netlink family ---- */

static const struct netlink_range_validation vmwlch_weight_range = {
	.min = 0,
	.max = VMWLCH_MAX_WEIGHT,
};

static const struct nla_policy vmwlch_member_policy[VMWLCH_MEMBER_A_MAX + 1] = {
	/* 4 or 16 bytes: the exact length is checked in Rust */
	[VMWLCH_MEMBER_A_ADDR] = { .type = NLA_BINARY, .len = 16 },
};

static const struct nla_policy vmwlch_host_policy[VMWLCH_A_MAX + 1] = {
	[VMWLCH_A_HOST_NAME] = { .type = NLA_NUL_STRING,
				 .len = VMWLCH_HOST_NAME_MAX - 1 },
	[VMWLCH_A_HOST_WEIGHT] = NLA_POLICY_FULL_RANGE(NLA_U32, &vmwlch_weight_range),
	[VMWLCH_A_HOST_MEMBERS] = NLA_POLICY_NESTED(vmwlch_member_policy),
};

/*
 * One policy per command: an attribute a command does not take is refused
 * by the core's strict validation instead of being ignored.
 */
#define VMWLCH_NAME_POLICY { .type = NLA_NUL_STRING, .len = VMWLCH_HOST_NAME_MAX - 1 }

static const struct nla_policy vmwlch_set_host_policy[VMWLCH_A_HOST_MEMBERS + 1] = {
	[VMWLCH_A_HOST_NAME] = VMWLCH_NAME_POLICY,
	[VMWLCH_A_HOST_WEIGHT] = NLA_POLICY_FULL_RANGE(NLA_U32, &vmwlch_weight_range),
	[VMWLCH_A_HOST_MEMBERS] = NLA_POLICY_NESTED(vmwlch_member_policy),
};

static const struct nla_policy vmwlch_add_members_policy[VMWLCH_A_HOST_MEMBERS + 1] = {
	[VMWLCH_A_HOST_NAME] = VMWLCH_NAME_POLICY,
	[VMWLCH_A_HOST_WEIGHT] = { .type = NLA_REJECT,
				   .reject_message = "ADD_MEMBERS does not change the weight: use SET_HOST" },
	[VMWLCH_A_HOST_MEMBERS] = NLA_POLICY_NESTED(vmwlch_member_policy),
};

static const struct nla_policy vmwlch_del_members_policy[VMWLCH_A_HOST_MEMBERS + 1] = {
	[VMWLCH_A_HOST_NAME] = VMWLCH_NAME_POLICY,
	[VMWLCH_A_HOST_WEIGHT] = { .type = NLA_REJECT,
				   .reject_message = "DEL_MEMBERS takes no weight" },
	[VMWLCH_A_HOST_MEMBERS] = NLA_POLICY_NESTED(vmwlch_member_policy),
};

static const struct nla_policy vmwlch_name_policy[VMWLCH_A_HOST_NAME + 1] = {
	[VMWLCH_A_HOST_NAME] = VMWLCH_NAME_POLICY,
};

#define VMWLCH_ONLY_HOST { .type = NLA_REJECT, \
	.reject_message = "REPLACE_MAP takes only HOST attributes (nested)" }

static const struct nla_policy vmwlch_replace_policy[VMWLCH_A_HOST + 1] = {
	[VMWLCH_A_HOST_NAME] = VMWLCH_ONLY_HOST,
	[VMWLCH_A_HOST_WEIGHT] = VMWLCH_ONLY_HOST,
	[VMWLCH_A_HOST_MEMBERS] = VMWLCH_ONLY_HOST,
	[VMWLCH_A_HOST] = NLA_POLICY_NESTED(vmwlch_host_policy),
};

/* FLUSH, GET_INFO and the host dump take no attributes. (A maxattr of 0
 * would skip parsing altogether: with 1 and no entries, strict validation
 * refuses any attribute.) */
static const struct nla_policy vmwlch_no_policy[VMWLCH_A_HOST_NAME + 1] = {};

static struct genl_family vmwlch_genl_family;

void *vmwlch_msg_put(struct sk_buff *skb, u32 portid, u32 seq, int flags,
		     u8 cmd)
{
	return genlmsg_put(skb, portid, seq, &vmwlch_genl_family, flags, cmd);
}

static int vmwlch_nl_change(struct sk_buff *skb, struct genl_info *info)
{
	struct vmwlch_net *vn = vmwlch_net(genl_info_net(info));
	const struct nlattr *attrs = nlmsg_attrdata(info->nlhdr, GENL_HDRLEN);
	int len = nlmsg_attrlen(info->nlhdr, GENL_HDRLEN);
	const char *msg = NULL;
	int bad = -1, ret;
	void *st;

	mutex_lock(&vn->lock);
	st = vmwlch_state_locked(genl_info_net(info));
	if (st)
		ret = vmwlch_rs_cmd(st, info->genlhdr->cmd, attrs, len, &msg,
				    &bad);
	else
		ret = -ENODEV;
	mutex_unlock(&vn->lock);

	if (ret && msg)
		NL_SET_ERR_MSG_FMT(info->extack, "%s", msg);
	if (ret && bad >= 0 && bad < len)
		NL_SET_BAD_ATTR(info->extack, (const void *)attrs + bad);
	return ret;
}

static int vmwlch_nl_get_host(struct sk_buff *skb, struct genl_info *info)
{
	struct vmwlch_net *vn = vmwlch_net(genl_info_net(info));
	struct sk_buff *reply;
	u32 member_off = 0;
	void *st;
	int idx, ret;

	if (GENL_REQ_ATTR_CHECK(info, VMWLCH_A_HOST_NAME))
		return -EINVAL;
	reply = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!reply)
		return -ENOMEM;

	mutex_lock(&vn->lock);
	st = vmwlch_state_locked(genl_info_net(info));
	idx = st ? vmwlch_rs_host_index(st, nla_data(info->attrs[VMWLCH_A_HOST_NAME]))
		 : -ENODEV;
	if (idx >= 0)
		ret = vmwlch_rs_fill_host(st, idx, &member_off, reply,
					  info->snd_portid, info->snd_seq, 0);
	else
		ret = idx;
	mutex_unlock(&vn->lock);

	if (ret == -ENOENT) {
		NL_SET_ERR_MSG_ATTR(info->extack, info->attrs[VMWLCH_A_HOST_NAME],
				    "no such host");
	} else if (ret == 1 || ret == -EMSGSIZE) {
		NL_SET_ERR_MSG(info->extack,
			       "host has too many members for one message: use a dump");
		ret = -EMSGSIZE;
	}
	if (ret) {
		nlmsg_free(reply);
		return ret;
	}
	return genlmsg_reply(reply, info);
}

static int vmwlch_nl_dump_hosts(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct vmwlch_net *vn = vmwlch_net(sock_net(skb->sk));
	u32 idx = cb->args[0], member_off = cb->args[1];
	int ret = 0;
	void *st;

	mutex_lock(&vn->lock);
	st = vmwlch_state_locked(sock_net(skb->sk));
	/* A change between two parts of the dump flags the next message
	 * NLM_F_DUMP_INTR (hosts may have moved): the client dumps again. */
	if (st)
		cb->seq = vmwlch_rs_generation(st) ?: 1;
	while (st) {
		unsigned int start = skb->len;

		ret = vmwlch_rs_fill_host(st, idx, &member_off, skb,
					  NETLINK_CB(cb->skb).portid,
					  cb->nlh->nlmsg_seq, NLM_F_MULTI);
		if (skb->len > start)
			nl_dump_check_consistent(cb, (struct nlmsghdr *)(skb->data + start));
		if (ret)
			break;
		idx++;
		member_off = 0;
	}
	mutex_unlock(&vn->lock);

	cb->args[0] = idx;
	cb->args[1] = member_off;
	/* -ENOENT: past the last host; 1/-EMSGSIZE: skb full, continue later */
	if (ret == -EMSGSIZE && skb->len == 0)
		return -EMSGSIZE;
	return skb->len;
}

static int vmwlch_nl_get_info(struct sk_buff *skb, struct genl_info *info)
{
	struct vmwlch_net *vn = net_generic(genl_info_net(info), vmwlch_net_id);
	struct vmwlch_counters sum = {};
	struct sk_buff *reply;
	int cpu, ret;
	void *st;

	reply = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
	if (!reply)
		return -ENOMEM;
	mutex_lock(&vn->lock);
	st = vmwlch_state_locked(genl_info_net(info));
	if (st) {
		for_each_possible_cpu(cpu) {
			struct vmwlch_counters *c = per_cpu_ptr(vn->stats, cpu);

			sum.decisions += READ_ONCE(c->decisions);
			sum.no_dest += READ_ONCE(c->no_dest);
			sum.fallback += READ_ONCE(c->fallback);
		}
	}
	ret = st ? vmwlch_rs_fill_info(st, reply, info->snd_portid,
				       info->snd_seq, &sum)
		 : -ENODEV;
	mutex_unlock(&vn->lock);
	if (ret) {
		nlmsg_free(reply);
		return ret;
	}
	return genlmsg_reply(reply, info);
}

/*
 * GENL_UNS_ADMIN_PERM: CAP_NET_ADMIN in the user namespace that owns the
 * network namespace, as the uAPI header says (the map is per namespace).
 * Split ops, sorted by command, so each has its own policy.
 */
#define VMWLCH_DO(c, fn, pol) { .cmd = (c), .doit = (fn), .policy = (pol), \
	.maxattr = ARRAY_SIZE(pol) - 1, .flags = GENL_UNS_ADMIN_PERM | GENL_CMD_CAP_DO }

static const struct genl_split_ops vmwlch_genl_ops[] = {
	VMWLCH_DO(VMWLCH_CMD_SET_HOST, vmwlch_nl_change, vmwlch_set_host_policy),
	VMWLCH_DO(VMWLCH_CMD_DEL_HOST, vmwlch_nl_change, vmwlch_name_policy),
	VMWLCH_DO(VMWLCH_CMD_ADD_MEMBERS, vmwlch_nl_change, vmwlch_add_members_policy),
	VMWLCH_DO(VMWLCH_CMD_DEL_MEMBERS, vmwlch_nl_change, vmwlch_del_members_policy),
	VMWLCH_DO(VMWLCH_CMD_REPLACE_MAP, vmwlch_nl_change, vmwlch_replace_policy),
	VMWLCH_DO(VMWLCH_CMD_FLUSH, vmwlch_nl_change, vmwlch_no_policy),
	VMWLCH_DO(VMWLCH_CMD_GET_HOST, vmwlch_nl_get_host, vmwlch_name_policy),
	{ .cmd = VMWLCH_CMD_GET_HOST, .dumpit = vmwlch_nl_dump_hosts,
	  .policy = vmwlch_no_policy, .maxattr = ARRAY_SIZE(vmwlch_no_policy) - 1,
	  .flags = GENL_UNS_ADMIN_PERM | GENL_CMD_CAP_DUMP },
	VMWLCH_DO(VMWLCH_CMD_GET_INFO, vmwlch_nl_get_info, vmwlch_no_policy),
};

static struct genl_family vmwlch_genl_family = {
	.name = VMWLCH_GENL_NAME,
	.version = VMWLCH_GENL_VERSION,
	.maxattr = VMWLCH_A_MAX,	/* reported to the controller only */
	.netnsok = true,
	.module = THIS_MODULE,
	.split_ops = vmwlch_genl_ops,
	.n_split_ops = ARRAY_SIZE(vmwlch_genl_ops),
	/* strict validation (no trailing data, no unknown attributes) for all */
	.resv_start_op = VMWLCH_CMD_UNSPEC + 1,
};

#ifdef VMWLCH_BENCH
/*
 * Benchmark build only (make VMWLCH_BENCH=1; scripts/bench-sched.sh): times
 * the in-kernel cost of one decision of vmwlch and of wlc on the first
 * vmwlc/vmwlch service of the writer's namespace. The wlc loop is the one of
 * net/netfilter/ipvs/ip_vs_wlc.c (not callable from here), over the same
 * destinations. Softirq-like context: BH off, RCU read lock, like schedule().
 */
#include <linux/debugfs.h>
#include <linux/ktime.h>
#include <linux/sched.h>

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
	int ret, stale;
	void *st;

	ret = kstrtou64_from_user(ubuf, len, 10, &iters);
	if (ret)
		return ret;
	if (!iters)
		return -EINVAL;
	mutex_lock(&vn->lock);
	st = vmwlch_state_locked(current->nsproxy->net_ns);
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
								     vmwlch_seed(), &stale);
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
#endif

/* ---- module setup ---- */

/*
 * The family is registered from a work item: IPVS autoloads a scheduler
 * module with request_module() while holding genl_mutex (ipvsadm's request
 * is a generic netlink command), and genl_register_family() takes
 * genl_mutex, so registering from module init would deadlock that path.
 * Init waits briefly so that a plain modprobe (or the genetlink family
 * alias) still finds the family registered when it returns.
 */
static bool vmwlch_genl_registered;
static DECLARE_COMPLETION(vmwlch_genl_done);

static void vmwlch_genl_work_fn(struct work_struct *work)
{
	int ret = genl_register_family(&vmwlch_genl_family);

	if (ret)
		pr_err("vmwlch: registering the VMWLCH netlink family failed (%d); the host map cannot be set\n",
		       ret);
	else
		WRITE_ONCE(vmwlch_genl_registered, true);
	complete_all(&vmwlch_genl_done);
}

static DECLARE_WORK(vmwlch_genl_work, vmwlch_genl_work_fn);

int vmwlch_glue_init(void)
{
	int ret, cpu;

	BUILD_BUG_ON(sizeof(struct rcu_head) != 2 * sizeof(void *));
	BUILD_BUG_ON(sizeof(atomic_t) != sizeof(int));

	for_each_possible_cpu(cpu)
		per_cpu(vmwlch_seq, cpu) = get_random_u64();

	ret = register_pernet_subsys(&vmwlch_net_ops);
	if (ret)
		return ret;
	ret = register_ip_vs_scheduler(&vmwlc_scheduler);
	if (ret)
		goto err_pernet;
	ret = register_ip_vs_scheduler(&vmwlch_scheduler);
	if (ret)
		goto err_vmwlc;
	schedule_work(&vmwlch_genl_work);
	wait_for_completion_timeout(&vmwlch_genl_done, HZ / 5);
#ifdef VMWLCH_BENCH
	vmwlch_bench_file = debugfs_create_file("vmwlch_bench", 0600, NULL,
						NULL, &vmwlch_bench_fops);
#endif
	return 0;

err_vmwlc:
	unregister_ip_vs_scheduler(&vmwlc_scheduler);
err_pernet:
	unregister_pernet_subsys(&vmwlch_net_ops);
	rcu_barrier();
	return ret;
}

void vmwlch_glue_exit(void)
{
#ifdef VMWLCH_BENCH
	debugfs_remove(vmwlch_bench_file);
#endif
	cancel_work_sync(&vmwlch_genl_work);
	if (READ_ONCE(vmwlch_genl_registered))
		genl_unregister_family(&vmwlch_genl_family);
	/* IPVS holds a module reference while a service uses a scheduler,
	 * so no service is bound to us any more. */
	unregister_ip_vs_scheduler(&vmwlch_scheduler);
	unregister_ip_vs_scheduler(&vmwlc_scheduler);
	unregister_pernet_subsys(&vmwlch_net_ops);
	/* A packet may still be in our schedule() (IPVS drops its module
	 * reference without a grace period): wait for such readers, then for
	 * the snapshot frees queued with call_rcu (they run module code). */
	synchronize_rcu();
	rcu_barrier();
}
