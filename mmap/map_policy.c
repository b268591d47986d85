/* map_policy.c — the mapping manager's policy (see map.h, "Admission"): when a file
 * has earned a map (fallbacks per MiB), when it has earned an eviction and is read
 * often enough to displace its victims, frequency sampling and TinyLFU aging, the
 * choice of victims on the ring of mapped files, and the gate that spaces out
 * failed admissions. map.c owns the mechanics: maps, budget, registry, unmapping. */
#include "mmap/map_internal.h"

#include <stddef.h>

/* Frequencies halve each time this many reads per registered file have gone by
 * (TinyLFU's reset): long enough that sampled counts of equally read files stay
 * within a few percent of each other, short enough to follow a shifting workload. */
#define AGE_READS_PER_FILE 1024u

/* Each thread's hit-sampling generator (map_policy_hit, in map_internal.h). */
_Thread_local uint64_t map_hit_lcg __attribute__((tls_model("initial-exec")));

/* ------------------------------------------------------------ the ring (under mu) */

void map_ring_insert(map_mgr *m, map_file *f)
{
    if (!m->hand) {
        f->ring_prev = f->ring_next = f;
        m->hand = f;
    } else { /* just behind the hand: the last the sweep reaches */
        f->ring_next = m->hand;
        f->ring_prev = m->hand->ring_prev;
        f->ring_prev->ring_next = f;
        m->hand->ring_prev = f;
    }
    m->ring_bytes += f->footprint_bytes;
}

void map_ring_remove(map_mgr *m, map_file *f)
{
    if (f->ring_next == f) m->hand = NULL;
    else {
        f->ring_prev->ring_next = f->ring_next;
        f->ring_next->ring_prev = f->ring_prev;
        if (m->hand == f) m->hand = f->ring_next;
    }
    f->ring_prev = f->ring_next = NULL;
    m->ring_bytes -= f->footprint_bytes;
}

/* ------------------------------------------------------------ thresholds, frequencies */

/* Fallbacks a file must take before it may evict: the cost of mapping it, in preads. */
static uint64_t evict_threshold(const map_mgr *m, const map_file *f)
{
    uint64_t mib = f->map_bytes / MIB + (f->map_bytes % MIB != 0), per = m->cfg.evict_fallbacks_per_mib;
    return per && mib > UINT64_MAX / per ? UINT64_MAX : mib * per;
}

/* Spaces out failed admissions: a full budget must not send every read to the mutex. */
int map_policy_gate(map_mgr *m, map_file *f, int reason, uint64_t retry_at)
{
    SET(&f->fail_reason, (uint8_t)reason);
    SET(&f->fail_gen, RLX(&m->unmap_gen));
    SET(&f->retry_at, retry_at);
    return reason;
}

/* Fallbacks before a first map: admit_fallbacks_per_mib pro rata, rounded up. */
static uint64_t admit_threshold(const map_mgr *m, const map_file *f)
{
    uint64_t per = m->cfg.admit_fallbacks_per_mib, whole = f->footprint_bytes / MIB;
    uint64_t rest = f->footprint_bytes % MIB; /* rest * per < 2^52: no wrap */
    if (per && whole > UINT64_MAX / per - 1) return UINT64_MAX;
    return whole * per + (rest * per + MIB - 1) / MIB;
}

/* Under mu: halves every frequency once per AGE_READS_PER_FILE reads per registered
 * file gone by, so frequencies follow the recent workload. */
static void age(map_mgr *m)
{
    uint64_t period = (uint64_t)AGE_READS_PER_FILE * (m->files ? m->files : 1);
    uint64_t now = RLX(&m->reads), halvings = (now - m->aged_at) / period;
    if (!halvings) return;
    m->aged_at = now;
    int shift = halvings > 63 ? 63 : (int)halvings;
    for (map_file *f = m->all; f; f = f->all_next) {
        uint64_t v = RLX(&f->freq);
        SUB(&f->freq, v - (v >> shift)); /* keeps hits counted meanwhile */
    }
}

static uint64_t isqrt(uint64_t v)
{
    uint64_t r = 0;
    for (uint64_t bit = 1ull << 62; bit; bit >>= 2) {
        if (v >= r + bit) {
            v -= r + bit;
            r = (r >> 1) + bit;
        } else {
            r >>= 1;
        }
    }
    return r;
}

/* A sampled hit count, taken high by two standard deviations and one sample: a map
 * whose few samples fell short by chance is not evicted for a file read as often. */
static uint64_t freq_high(uint64_t freq) { return freq + 2 * isqrt(HIT_SAMPLE * freq) + HIT_SAMPLE; }

/* Reads per byte, for comparing files of different sizes. */
static double density(uint64_t freq, uint64_t bytes) { return bytes ? (double)freq / (double)bytes : 0; }

/* Under mu: chooses the least frequently read maps (per byte; the oldest first on
 * ties) until want bytes, as a list through next_chosen; sums their frequency and
 * footprint. The caller evicts them or clears their marks. */
static map_file *pick_victims(map_mgr *m, uint64_t want, uint64_t *freq, uint64_t *bytes)
{
    map_file *chosen = NULL;
    *freq = *bytes = 0;
    while (*bytes < want) {
        map_file *best = NULL, *v = m->hand;
        double best_d = 0;
        if (v) do {
                double d = density(RLX(&v->freq), v->footprint_bytes);
                if (!v->chosen && (!best || d < best_d)) best = v, best_d = d;
                v = v->ring_next;
            } while (v != m->hand);
        if (!best) break;
        best->chosen = 1;
        best->next_chosen = chosen;
        chosen = best;
        *freq += RLX(&best->freq);
        *bytes += best->footprint_bytes;
    }
    return chosen;
}

/* Under mu: unlinks the chosen maps, and returns their regions for retirement after
 * the mutex is dropped. Victims must re-earn admission. */
static map_region *evict(map_mgr *m, map_file *chosen)
{
    map_region *victims = NULL;
    for (map_file *v = chosen, *next; v; v = next) {
        next = v->next_chosen;
        v->chosen = 0;
        v->next_chosen = NULL;
        map_ring_remove(m, v);
        map_region *r = RLX(&v->region);
        ST(&v->region, NULL);
        SET(&v->state, F_IDLE);
        SET(&v->fallbacks, 0);
        SET(&v->retry_at, 0);
        ADD(&m->retiring_bytes, r->footprint_bytes);
        ADD(&m->evictions, 1);
        r->next_victim = victims;
        victims = r;
    }
    return victims;
}

static void unchoose(map_file *chosen)
{
    for (map_file *v = chosen, *next; v; v = next) {
        next = v->next_chosen;
        v->chosen = 0;
        v->next_chosen = NULL;
    }
}

/* ------------------------------------------------------------ admission decisions */

int map_policy_wait(map_mgr *m, map_file *f, uint64_t *n, int *why)
{
    uint64_t k = ADD(&f->fallbacks, 1) + 1;
    ADD(&f->freq, 1);
    ADD(&m->reads, 1);
    *n = k;
    if (k < admit_threshold(m, f)) { /* not worth a map yet: no mutex */
        *why = MAP_FALLBACK_COLD;
        return 1;
    }
    if (k < RLX(&f->retry_at) && RLX(&m->unmap_gen) == RLX(&f->fail_gen)) {
        *why = RLX(&f->fail_reason);
        return 1;
    }
    return 0;
}

int map_policy_no_room(map_mgr *m, map_file *f, uint64_t n, uint64_t staying, map_region **victims)
{
    uint64_t need = f->footprint_bytes, budget = m->budget_bytes, admit_at = admit_threshold(m, f);
    *victims = NULL;
    /* No room now. If the maps on their way out will make room, wait for them;
     * else evict, once the file has earned it, the ring can free enough, and the
     * file is read more often than what it would evict. */
    uint64_t retry_at = n + m->cfg.retry_every;
    if (staying + need > budget) {
        uint64_t want = staying + need - budget, earned = evict_threshold(m, f);
        if (n < earned) retry_at = earned;
        else if (m->ring_bytes >= want) {
            age(m);
            uint64_t vfreq, vbytes;
            map_file *chosen = pick_victims(m, want, &vfreq, &vbytes);
            uint64_t ratio = m->cfg.evict_freq_ratio;
            if (!ratio || density(RLX(&f->freq), need) > (double)ratio * density(freq_high(vfreq), vbytes)) {
                /* The credit is spent: if another file takes the room first, this
                 * one must earn it again, so evictions never outpace fallbacks. */
                *victims = evict(m, chosen);
                SET(&f->fallbacks, admit_at);
                retry_at = admit_at + m->cfg.retry_every;
            } else {
                unchoose(chosen);
                ADD(&m->freq_refusals, 1);
            }
        }
    }
    return map_policy_gate(m, f, MAP_FALLBACK_OVER_BUDGET, retry_at);
}
