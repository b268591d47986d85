/* inflight.c — GC's check for puts in flight (inflight.h, issue 17). */
#include "valuelog/inflight.h"

#include <stdlib.h>
#include <string.h>

#include "valuelog/internal.h"

static int push(struct vlog *log, uint64_t **a, size_t *n, size_t *cap, uint64_t v)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        uint64_t *b = xalloc(log, c * sizeof *b);
        if (!b) return VLOG_ENOMEM;
        if (*n) memcpy(b, *a, *n * sizeof *b);
        xfree(log, *a, *cap * sizeof **a);
        *a = b;
        *cap = c;
    }
    (*a)[(*n)++] = v;
    return VLOG_OK;
}

/* A record's place and member index, without the count bits: a late-bound member's
 * pointer (count 0, §4) and its resolved form name the same value. */
static uint64_t place_of(vlog_ptr p) { return ptr_field(ptr_off(p.offset), 0, ptr_member(p.offset)); }

void inflight_discarded_locked(struct vlog *log, seg *s, vlog_ptr p)
{
    if (ptr_off(p.offset) < s->sess_from) return; /* an earlier session's: never in flight */
    s->sess_discards++;
    inflight *f = s->watch;
    if (f && !f->lost && push(log, &f->noted, &f->n_noted, &f->cap_noted, place_of(p)) != 0) f->lost = 1;
}

void inflight_begin_locked(seg *s, inflight *f)
{
    memset(f, 0, sizeof *f);
    f->before = s->sess_discards;
    s->watch = f;
}

int inflight_dead(struct vlog *log, const seg *s, inflight *f, vlog_ptr p)
{
    if (ptr_off(p.offset) < s->sess_from) return VLOG_OK;
    return push(log, &f->dead, &f->n_dead, &f->cap_dead, place_of(p));
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

uint64_t inflight_end_locked(struct vlog *log, seg *s, inflight *f)
{
    s->watch = NULL;
    /* The dead records no discard during the collection covers: each discarded one
     * before it was judged dead too, so these must be exactly those. */
    uint64_t uncovered = 0;
    if (f->n_noted) qsort(f->noted, f->n_noted, sizeof *f->noted, cmp_u64);
    for (size_t i = 0; i < f->n_dead; i++)
        if (!f->n_noted || !bsearch(&f->dead[i], f->noted, f->n_noted, sizeof *f->noted, cmp_u64)) uncovered++;
    uint64_t missing = f->lost ? f->n_dead : uncovered > f->before ? uncovered - f->before : 0;
    xfree(log, f->noted, f->cap_noted * sizeof *f->noted);
    xfree(log, f->dead, f->cap_dead * sizeof *f->dead);
    memset(f, 0, sizeof *f);
    return missing;
}

void inflight_rest_locked(seg *s, uint64_t now_ns)
{
    s->defer_ns = now_ns;
    s->defer_mark = s->sess_discards;
}

int inflight_resting(const seg *s, uint64_t now_ns)
{
    return s->defer_ns && now_ns - s->defer_ns < INFLIGHT_REST_NS && s->sess_discards == s->defer_mark;
}
