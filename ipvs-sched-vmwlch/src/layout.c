// SPDX-License-Identifier: GPL-2.0
/*
 * Offsets of the struct ip_vs_dest and ip_vs_service fields Rust reads, turned into
 * Rust constants (src/layout.rs) by Kbuild the way the kernel makes its
 * asm-offsets: compiled to assembly only, never linked. With compile-time
 * offsets the scheduling loop reads each field straight from the destination.
 */
#include <linux/kbuild.h>
#include <net/ip_vs.h>

void vmwlch_layout(void);

void vmwlch_layout(void)
{
	DEFINE(DEST_WEIGHT, offsetof(struct ip_vs_dest, weight));
	DEFINE(DEST_ACTIVECONNS, offsetof(struct ip_vs_dest, activeconns));
	/* The second term of wlc's overhead on this kernel (see glue.h). */
#ifdef VMWLCH_HAVE_TOTALCONNS
	DEFINE(DEST_OVERHEAD_TERM, offsetof(struct ip_vs_dest, totalconns));
#else
	DEFINE(DEST_OVERHEAD_TERM, offsetof(struct ip_vs_dest, inactconns));
#endif
	DEFINE(DEST_FLAGS, offsetof(struct ip_vs_dest, flags));
	DEFINE(DEST_WEIGHT_SIZE, sizeof(((struct ip_vs_dest *)0)->weight));
	DEFINE(DEST_ACTIVECONNS_SIZE, sizeof(((struct ip_vs_dest *)0)->activeconns));
	DEFINE(DEST_FLAGS_SIZE, sizeof(((struct ip_vs_dest *)0)->flags));
#ifdef VMWLCH_HAVE_TOTALCONNS
	DEFINE(DEST_TERM_IS_TOTAL, 1);
#else
	DEFINE(DEST_TERM_IS_TOTAL, 0);
#endif
	/* Set when the destination is created, never changed. */
	DEFINE(DEST_AF, offsetof(struct ip_vs_dest, af));
	DEFINE(DEST_AF_SIZE, sizeof(((struct ip_vs_dest *)0)->af));
	DEFINE(DEST_ADDR, offsetof(struct ip_vs_dest, addr));
	DEFINE(DEST_ADDR_SIZE, sizeof(((struct ip_vs_dest *)0)->addr));
	/* The scheduler's own word in the service (the service's slot). */
	DEFINE(SVC_SCHED_DATA, offsetof(struct ip_vs_service, sched_data));
	DEFINE(SVC_SCHED_DATA_SIZE, sizeof(((struct ip_vs_service *)0)->sched_data));
}
