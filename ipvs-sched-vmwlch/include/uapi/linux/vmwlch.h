/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * VMWLCH generic netlink family: the VM-to-physical-host map and host
 * weights used by the IPVS schedulers "vmwlc" and "vmwlch".
 *
 * This header is the single source of truth for the wire protocol; the
 * user-space client (ipvsctl/src/vmwlch.rs) mirrors it and a test checks
 * that the two agree.
 *
 * All state is per network namespace. Every command needs CAP_NET_ADMIN
 * in the namespace's user namespace. Each command takes only the
 * attributes listed below (others are rejected). Rejections carry an
 * extack message.
 */
#ifndef _UAPI_LINUX_VMWLCH_H
#define _UAPI_LINUX_VMWLCH_H

#define VMWLCH_GENL_NAME	"VMWLCH"
#define VMWLCH_GENL_VERSION	1

/* Limits (also reported by VMWLCH_CMD_GET_INFO). */
#define VMWLCH_HOST_NAME_MAX	64	/* bytes, including the NUL */
#define VMWLCH_MAX_HOSTS	1024	/* hosts per namespace */
#define VMWLCH_MAX_MEMBERS	65536	/* mapped addresses per namespace */
#define VMWLCH_MAX_WEIGHT	65535	/* host weight; 0 drains the host */
#define VMWLCH_DEFAULT_WEIGHT	1

enum vmwlch_cmd {
	VMWLCH_CMD_UNSPEC,
	/* Create or update a host: HOST_NAME, optional HOST_WEIGHT (default
	 * VMWLCH_DEFAULT_WEIGHT on create, unchanged on update), optional
	 * HOST_MEMBERS (addresses added to the host; an address mapped to
	 * another host moves). */
	VMWLCH_CMD_SET_HOST,
	/* Delete a host and unmap its members: HOST_NAME. */
	VMWLCH_CMD_DEL_HOST,
	/* Map addresses to an existing host: HOST_NAME, HOST_MEMBERS (no
	 * HOST_WEIGHT: SET_HOST changes it). */
	VMWLCH_CMD_ADD_MEMBERS,
	/* Unmap addresses: HOST_MEMBERS (HOST_NAME not needed). */
	VMWLCH_CMD_DEL_MEMBERS,
	/* Replace the whole map atomically: zero or more HOST attributes
	 * (nested, each with HOST_NAME, HOST_WEIGHT, HOST_MEMBERS). */
	VMWLCH_CMD_REPLACE_MAP,
	/* Delete every host. */
	VMWLCH_CMD_FLUSH,
	/* Dump hosts (NLM_F_DUMP, no attributes): one message per host with
	 * HOST_* incl. the live load; a change between two parts of the dump
	 * sets NLM_F_DUMP_INTR on the next message (dump again). Or one host
	 * by HOST_NAME. */
	VMWLCH_CMD_GET_HOST,
	/* Module version, limits and counters: INFO_* attributes. */
	VMWLCH_CMD_GET_INFO,
	__VMWLCH_CMD_MAX,
};
#define VMWLCH_CMD_MAX (__VMWLCH_CMD_MAX - 1)

enum vmwlch_attr {
	VMWLCH_A_UNSPEC,
	VMWLCH_A_HOST_NAME,		/* NUL-terminated string */
	VMWLCH_A_HOST_WEIGHT,		/* u32 */
	VMWLCH_A_HOST_MEMBERS,		/* nested: VMWLCH_A_MEMBER_ADDR... */
	VMWLCH_A_HOST,			/* nested: HOST_* (REPLACE_MAP) */
	VMWLCH_A_HOST_ACTIVECONNS,	/* u64, dump only: sum over tracked dests */
	VMWLCH_A_HOST_INACTCONNS,	/* u64, dump only */
	VMWLCH_A_HOST_DESTS,		/* u32, dump only: tracked destinations */
	VMWLCH_A_INFO_VERSION,		/* string, e.g. "0.1.0" */
	VMWLCH_A_INFO_MAX_HOSTS,	/* u32 */
	VMWLCH_A_INFO_MAX_MEMBERS,	/* u32 */
	VMWLCH_A_INFO_HOSTS,		/* u32: hosts in this namespace */
	VMWLCH_A_INFO_MEMBERS,		/* u32: mapped addresses */
	VMWLCH_A_INFO_SERVICES,		/* u32: services using vmwlc/vmwlch */
	VMWLCH_A_INFO_DESTS,		/* u32: tracked destinations */
	VMWLCH_A_INFO_DECISIONS,	/* u64: successful scheduling decisions */
	VMWLCH_A_INFO_NO_DEST,		/* u64: decisions with no eligible dest */
	VMWLCH_A_INFO_GENERATION,	/* u32: bumped on every map/dest change */
	VMWLCH_A_PAD,
	/* The scheduling snapshot (see the module's README): */
	VMWLCH_A_INFO_FALLBACKS,	/* u64: decisions made by plain wlc over
					 * the service while the snapshot was
					 * not current (after a change, until
					 * its rebuild; or after a failed one) */
	VMWLCH_A_INFO_REBUILDS,		/* u64: snapshots built and published */
	VMWLCH_A_INFO_DEFERRED,		/* u64: changes whose rebuild was
					 * deferred and coalesced with others */
	VMWLCH_A_INFO_REBUILD_FAILURES,	/* u64: rebuilds that ran out of memory */
	VMWLCH_A_INFO_REBUILD_RETRIES,	/* u64: rebuilds retried after a failure */
	VMWLCH_A_INFO_TRACK_FAILURES,	/* u64: add_dest callbacks that ran out
					 * of memory (re-read at the next rebuild) */
	VMWLCH_A_INFO_SNAPSHOT_CURRENT,	/* u32: 1 if decisions use the snapshot,
					 * 0 while they fall back to plain wlc */
	VMWLCH_A_INFO_BUILD_NS,		/* u64: time spent building snapshots (ns) */
	VMWLCH_A_INFO_HOST_AWARE,	/* u64: schedule calls decided host-aware,
					 * from a current snapshot (the others
					 * are FALLBACKS) */
	__VMWLCH_A_MAX,
};
#define VMWLCH_A_MAX (__VMWLCH_A_MAX - 1)

/* Inside VMWLCH_A_HOST_MEMBERS. */
enum vmwlch_member_attr {
	VMWLCH_MEMBER_A_UNSPEC,
	/* 4 bytes (IPv4) or 16 bytes (IPv6), network byte order */
	VMWLCH_MEMBER_A_ADDR,
	__VMWLCH_MEMBER_A_MAX,
};
#define VMWLCH_MEMBER_A_MAX (__VMWLCH_MEMBER_A_MAX - 1)

#endif /* _UAPI_LINUX_VMWLCH_H */
