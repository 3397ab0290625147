// SPDX-License-Identifier: GPL-2.0
/*
 * User-space stand-in for the native benchmark (scripts/bench-sched.sh):
 * destinations laid out like struct ip_vs_dest (list node first, the
 * counters far into the structure) and wlc's selection over the service's
 * list, as the kernel's ip_vs_wlc does it, compiled by gcc -O2 like the
 * kernel. native.rs times it against the module's selection code;
 * wlc_oracle.rs checks the module's fallback wlc against it.
 */
#include <stddef.h>
#include <stdlib.h>

struct node { struct node *next, *prev; };

struct dest {
	struct node n_list;		/* the service's list, as in ip_vs_dest */
	struct node d_list;
	unsigned short af, port;
	unsigned int addr[4];
	volatile unsigned int flags;
	volatile unsigned int conn_flags;
	volatile int weight;
	volatile int last_weight;
	char middle[364];		/* stats, thresholds, ... */
	volatile int activeconns;	/* 8-byte aligned, inactconns next */
	volatile int inactconns;
	volatile int persistconns;
};

struct svc { struct node destinations; };

#define F_OVERLOAD 2

/* ip_vs_dest_conn_overhead(): an int, as the kernel's (-fno-strict-overflow). */
static inline int overhead(const struct dest *d)
{
	return (d->activeconns << 8) + d->inactconns;
}

/*
 * The least overhead/weight among non-overloaded destinations: the first one
 * of positive weight, then a cross-multiplied compare with each later one
 * (a weight of 0 never compares greater), the shape of the kernel's loop.
 */
__attribute__((noinline)) struct dest *bench_wlc(struct svc *svc)
{
	struct dest *least, *d;
	int loh, doh;
	struct node *p;

	for (p = svc->destinations.next; p != &svc->destinations; p = p->next) {
		least = (struct dest *)p;
		if (!(least->flags & F_OVERLOAD) && least->weight > 0)
			goto found;
	}
	return NULL;
found:
	loh = overhead(least);
	for (p = p->next; p != &svc->destinations; p = p->next) {
		d = (struct dest *)p;
		if (d->flags & F_OVERLOAD)
			continue;
		doh = overhead(d);
		if ((long long)loh * d->weight > (long long)doh * least->weight) {
			least = d;
			loh = doh;
		}
	}
	return least;
}

const size_t bench_off_weight = offsetof(struct dest, weight);
const size_t bench_off_flags = offsetof(struct dest, flags);
const size_t bench_off_active = offsetof(struct dest, activeconns);
const size_t bench_off_inact = offsetof(struct dest, inactconns);

/* A service of n destinations (weights 1, 2, 3, ...), each allocated on its own. */
struct svc *bench_service(int n, struct dest **out)
{
	struct svc *s = calloc(1, sizeof(*s));
	struct node *tail;
	int i;

	if (!s)
		return NULL;
	tail = &s->destinations;
	for (i = 0; i < n; i++) {
		struct dest *d = malloc(sizeof(*d));

		if (!d)
			return NULL;
		*d = (struct dest){ .weight = 1 + i % 3 };
		out[i] = d;
		tail->next = &d->n_list;
		d->n_list.prev = tail;
		tail = &d->n_list;
	}
	tail->next = &s->destinations;
	s->destinations.prev = tail;
	return s;
}
