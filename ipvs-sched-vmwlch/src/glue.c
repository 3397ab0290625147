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
#include <linux/random.h>
#include <linux/rcupdate.h>
#include <linux/completion.h>
#include <net/genetlink.h>
#include <net/net_namespace.h>

#include "../include/uapi/linux/vmwlch.h"
#include "glue_net.h"

unsigned int vmwlch_net_id __read_mostly;
DEFINE_PER_CPU(u64, vmwlch_seq);

/* ---- accessors for Rust ---- */

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

void vmwlch_queue_rebuild(void *vn, unsigned long delay)
{
	struct vmwlch_net *n = vn;

	mod_delayed_work(system_unbound_wq, &n->rebuild, delay);
}

void *vmwlch_cpu_cache_alloc(size_t size)
{
	/* Larger than a per-CPU unit (over 2,048 hosts): no cache. */
	if (!size || size > PCPU_MIN_UNIT_SIZE)
		return NULL;
	return (void __force *)__alloc_percpu_gfp(size, sizeof(u64),
						   GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
}

void vmwlch_cpu_cache_free(void *cache)
{
	free_percpu((void __percpu __force *)cache);
}

void *vmwlch_cpu_cache_get(void *cache)
{
	return get_cpu_ptr((void __percpu __force *)cache);
}

void vmwlch_cpu_cache_put(void)
{
	preempt_enable();
}

unsigned long vmwlch_jiffies(void)
{
	return READ_ONCE(jiffies);
}

static void vmwlch_rebuild_fn(struct work_struct *work)
{
	struct vmwlch_net *vn = container_of(to_delayed_work(work),
					     struct vmwlch_net, rebuild);
	void *st;

	mutex_lock(&vn->lock);
	/* NULL once the namespace is going away (then nothing requeues us). */
	st = vmwlch_state_locked(vn);
	if (st)
		vmwlch_rs_rebuild_work(st);
	mutex_unlock(&vn->lock);
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
	st = vmwlch_state_locked(vn);
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
	st = vmwlch_state_locked(vn);
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
	st = vmwlch_state_locked(vn);
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

static struct ip_vs_dest *vmwlch_schedule_common(struct ip_vs_service *svc,
						 int kind)
{
	struct vmwlch_net *vn = vmwlch_net(svc->ipvs->net);
	struct ip_vs_dest *dest;
	int fallback = 0;

	dest = vmwlch_rs_schedule(rcu_dereference(vn->state), svc, kind,
				  vmwlch_seed(), vmwlch_conn_cost(svc), &fallback);
	if (fallback)
		this_cpu_inc(vn->stats->fallback);
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

struct ip_vs_scheduler vmwlch_scheduler = {
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

	vn->stats = alloc_percpu_gfp(struct vmwlch_counters, GFP_KERNEL_ACCOUNT);
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
		vn->dying = vmwlch_state_locked(vn);
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

/* The do-commands: Rust parses, validates, applies and fills the reply. */
static int vmwlch_nl_do(struct sk_buff *skb, struct genl_info *info)
{
	struct vmwlch_net *vn = vmwlch_net(genl_info_net(info));
	const struct nlattr *attrs = nlmsg_attrdata(info->nlhdr, GENL_HDRLEN);
	int len = nlmsg_attrlen(info->nlhdr, GENL_HDRLEN);
	u8 cmd = info->genlhdr->cmd;
	struct vmwlch_counters sum = {};
	struct sk_buff *reply = NULL;
	const char *msg = NULL;
	int bad = -1, ret = -ENODEV, cpu;
	void *st;

	if (cmd == VMWLCH_CMD_GET_HOST || cmd == VMWLCH_CMD_GET_INFO) {
		reply = genlmsg_new(NLMSG_GOODSIZE, GFP_KERNEL);
		if (!reply)
			return -ENOMEM;
	}
	for_each_possible_cpu(cpu) {
		struct vmwlch_counters *c = per_cpu_ptr(vn->stats, cpu);

		sum.decisions += READ_ONCE(c->decisions);
		sum.no_dest += READ_ONCE(c->no_dest);
		sum.fallback += READ_ONCE(c->fallback);
	}
	mutex_lock(&vn->lock);
	st = vmwlch_state_locked(vn);
	if (st)
		ret = vmwlch_rs_do(st, cmd, attrs, len, reply, info->snd_portid,
				   info->snd_seq, &sum, &msg, &bad);
	mutex_unlock(&vn->lock);

	if (ret) {
		if (msg)
			NL_SET_ERR_MSG_FMT(info->extack, "%s", msg);
		if (bad >= 0 && bad < len)
			NL_SET_BAD_ATTR(info->extack, (const void *)attrs + bad);
		nlmsg_free(reply);
		return ret;
	}
	return reply ? genlmsg_reply(reply, info) : 0;
}

static int vmwlch_nl_dump_hosts(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct vmwlch_net *vn = vmwlch_net(sock_net(skb->sk));
	u32 idx = cb->args[0], member_off = cb->args[1];
	int ret = 0;
	void *st;

	void *index = NULL;

	mutex_lock(&vn->lock);
	st = vmwlch_state_locked(vn);
	/* A change between two parts of the dump flags the next message
	 * NLM_F_DUMP_INTR (hosts may have moved): the client dumps again. */
	if (st) {
		cb->seq = vmwlch_rs_generation(st) ?: 1;
		index = vmwlch_rs_dump_index(st);
		if (!index) {
			mutex_unlock(&vn->lock);
			return -ENOMEM;
		}
	}
	while (st) {
		unsigned int start = skb->len;

		ret = vmwlch_rs_fill_host(st, index, idx, &member_off, skb,
					  NETLINK_CB(cb->skb).portid,
					  cb->nlh->nlmsg_seq, NLM_F_MULTI);
		if (skb->len > start)
			nl_dump_check_consistent(cb, (struct nlmsghdr *)(skb->data + start));
		if (ret)
			break;
		idx++;
		member_off = 0;
	}
	vmwlch_rs_dump_index_free(index);
	mutex_unlock(&vn->lock);

	cb->args[0] = idx;
	cb->args[1] = member_off;
	/* -ENOENT: past the last host; 1/-EMSGSIZE: skb full, continue later */
	if (ret == -EMSGSIZE && skb->len == 0)
		return -EMSGSIZE;
	return skb->len;
}

/*
 * GENL_UNS_ADMIN_PERM: CAP_NET_ADMIN in the user namespace that owns the
 * network namespace, as the uAPI header says (the map is per namespace).
 * Split ops, sorted by command, so each has its own policy.
 */
#define VMWLCH_DO(c, pol) { .cmd = (c), .doit = vmwlch_nl_do, .policy = (pol), \
	.maxattr = ARRAY_SIZE(pol) - 1, .flags = GENL_UNS_ADMIN_PERM | GENL_CMD_CAP_DO }

static const struct genl_split_ops vmwlch_genl_ops[] = {
	VMWLCH_DO(VMWLCH_CMD_SET_HOST, vmwlch_set_host_policy),
	VMWLCH_DO(VMWLCH_CMD_DEL_HOST, vmwlch_name_policy),
	VMWLCH_DO(VMWLCH_CMD_ADD_MEMBERS, vmwlch_add_members_policy),
	VMWLCH_DO(VMWLCH_CMD_DEL_MEMBERS, vmwlch_del_members_policy),
	VMWLCH_DO(VMWLCH_CMD_REPLACE_MAP, vmwlch_replace_policy),
	VMWLCH_DO(VMWLCH_CMD_FLUSH, vmwlch_no_policy),
	VMWLCH_DO(VMWLCH_CMD_GET_HOST, vmwlch_name_policy),
	{ .cmd = VMWLCH_CMD_GET_HOST, .dumpit = vmwlch_nl_dump_hosts,
	  .policy = vmwlch_no_policy, .maxattr = ARRAY_SIZE(vmwlch_no_policy) - 1,
	  .flags = GENL_UNS_ADMIN_PERM | GENL_CMD_CAP_DUMP },
	VMWLCH_DO(VMWLCH_CMD_GET_INFO, vmwlch_no_policy),
};

static struct genl_family vmwlch_genl_family = {
	.name = VMWLCH_GENL_NAME,
	.version = VMWLCH_GENL_VERSION,
	.maxattr = VMWLCH_A_MAX,	/* reported to the controller only */
	.netnsok = true,
	/*
	 * The handlers serialise on their namespace's vn->lock, nothing else
	 * needs genl_mutex: without it a map command's rebuild (a large map,
	 * a slow allocation) holds up only its own namespace, not every generic
	 * netlink family of the machine (IPVS's among them).
	 */
	.parallel_ops = true,
	.module = THIS_MODULE,
	.split_ops = vmwlch_genl_ops,
	.n_split_ops = ARRAY_SIZE(vmwlch_genl_ops),
	/* strict validation (no trailing data, no unknown attributes) for all */
	.resv_start_op = VMWLCH_CMD_UNSPEC + 1,
};


/* ---- module setup ---- */

/*
 * The family is registered from a work item: IPVS autoloads a scheduler
 * module with request_module() while holding genl_mutex (ipvsadm's request
 * is a generic netlink command), and genl_register_family() takes
 * genl_mutex, so registering from module init would deadlock that path.
 * Init waits briefly so that a plain modprobe (or the genetlink family
 * alias) still finds the family registered when it returns. A failed
 * registration is retried (1 s, doubling to once a minute), and logged each
 * time: the schedulers work meanwhile, but the host map cannot be set.
 */
static bool vmwlch_genl_registered;
static unsigned int vmwlch_genl_failures;
static DECLARE_COMPLETION(vmwlch_genl_done);

static void vmwlch_genl_work_fn(struct work_struct *work)
{
	unsigned long delay;
	int ret = genl_register_family(&vmwlch_genl_family);

	if (!ret) {
		WRITE_ONCE(vmwlch_genl_registered, true);
		if (vmwlch_genl_failures)
			pr_info("vmwlch: VMWLCH netlink family registered after %u failed attempts\n",
				vmwlch_genl_failures);
	} else {
		delay = HZ << min(vmwlch_genl_failures++, 6U);
		delay = min(delay, 60UL * HZ);
		pr_err("vmwlch: registering the VMWLCH netlink family failed (%d); the host map cannot be set; retrying in %lu s\n",
		       ret, delay / HZ);
		schedule_delayed_work(to_delayed_work(work), delay);
	}
	complete_all(&vmwlch_genl_done);
}

static DECLARE_DELAYED_WORK(vmwlch_genl_work, vmwlch_genl_work_fn);

int vmwlch_glue_init(void)
{
	int ret, cpu;

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
	schedule_delayed_work(&vmwlch_genl_work, 0);
	wait_for_completion_timeout(&vmwlch_genl_done, HZ / 5);
	vmwlch_bench_init();
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
	vmwlch_bench_exit();
	cancel_delayed_work_sync(&vmwlch_genl_work);
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
