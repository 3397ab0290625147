// SPDX-License-Identifier: GPL-2.0
/*
 * Offsets of the struct ip_vs_dest fields that schedule() reads, turned into
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
}
