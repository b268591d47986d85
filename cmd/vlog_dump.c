/*
 * vlog_dump.c — `vlog dump DIR [--values] [--json] [--from SEG:OFF] [--salvage]`:
 * opens an existing log read-only and prints one line per record in log order, from
 * the record iterator (vlog_iter_*): where it is, its kind, codec, dictionary, key
 * in hex and value length (and the value in hex with --values). Damage is reported
 * with segment and offset and makes the exit status 1. Never modifies a file.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd/vlog_cmd.h"

/* docs/FORMAT.md: a segment's first record follows its 32-byte header (§3.1); a
 * pointer's offset is bits 0..47 of its field, a framed member's bits above (§4). */
#define FIRST_RECORD_OFFSET 32u
#define OFFSET_MASK ((1ull << 48) - 1)

const char cmd_dump_help[] =
    "Usage: vlog dump DIR [--values] [--json] [--from SEG:OFF] [--salvage]\n"
    "\n"
    "Open the log in DIR read-only and print its records in log order (segments in id\n"
    "order, each from its first record), one line each:\n"
    "  segment=S offset=O length=L kind=value|tombstone codec=none|lz4|zlib|zstd dict=D\n"
    "  [member=M/N | member=M late] key=HEX value_len=N [origin=S for a tombstone]\n"
    "  [value=HEX with --values]\n"
    "where length is the whole record's bytes (docs/FORMAT.md §3.2) and value_len the\n"
    "value's as the user gave it (a tombstone's 4 bytes hold its origin segment). A\n"
    "grouped frame (§3.5) prints one line per member: its offset and length are the\n"
    "frame's, member=M/N its index and the frame's member count. A late-bound\n"
    "frame's member (written with frame_single_puts, §3.5) prints its pointer as the\n"
    "put returned it: length=0 and member=M late (the count is in the frame's header).\n"
    "Segments that garbage collection retired are not walked. Every record is checked\n"
    "(header, lengths, CRC32C bound to its place) before it is printed. Never modifies\n"
    "a file.\n"
    "\n"
    "Options:\n"
    "  --values         print each value in hex (decoded when compressed)\n"
    "  --json           one JSON object per line instead, with the fields above\n"
    "                   (\"segment\", \"offset\", \"length\", \"kind\", \"codec\", \"dict\",\n"
    "                   \"member\", \"members\", \"late\", \"key\", \"value_len\",\n"
    "                   \"stored_len\", and \"origin\", \"value\")\n"
    "  --from SEG:OFF   start at offset OFF of segment SEG (decimal; a record's start\n"
    "                   or the segment's end), or at the first record of the next\n"
    "                   segment when SEG is gone\n"
    "  --salvage        skip a damaged record and go on at the next valid one; each\n"
    "                   skip is a line: damage segment=S offset=O skipped=N\n"
    "  -h, --help       show this help\n"
    "\n"
    "A damaged record ends the dump (without --salvage) with a line\n"
    "  damage segment=S offset=O error=\"...\"\n"
    "(with --json, an object with \"kind\": \"damage\") and a message on stderr. A\n"
    "--from offset inside a record (or past a segment's records) is no damage: the\n"
    "message names the record that covers it (or where the records end), with no\n"
    "damage line.\n"
    "With --json the last line is the run's summary: {\"command\": \"dump\", \"ok\",\n"
    "\"exit_status\", \"records\", \"skipped_bytes\"}.\n"
    "\n"
    "Exit status:\n"
    "  0  every record printed, none damaged\n"
    "  1  damage found (a damaged record, or bytes skipped with --salvage), or --from\n"
    "     names no record of the log (not a record's start, or a segment past the\n"
    "     last)\n"
    "  2  usage error\n"
    "  3  DIR does not exist or holds no log, or an I/O error\n";

typedef struct dump {
    int values, json;
    unsigned char hexbuf[8192];
} dump;

/* len bytes as lower-case hex on stdout. */
static void put_hex(dump *d, const void *p, size_t len)
{
    static const char digits[] = "0123456789abcdef";
    const unsigned char *b = p;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        d->hexbuf[n++] = (unsigned char)digits[b[i] >> 4];
        d->hexbuf[n++] = (unsigned char)digits[b[i] & 15];
        if (n == sizeof d->hexbuf) {
            fwrite(d->hexbuf, 1, n, stdout);
            n = 0;
        }
    }
    fwrite(d->hexbuf, 1, n, stdout);
}

static void print_entry(dump *d, const vlog_iter_entry *e)
{
    int tomb = e->kind == VLOG_KIND_TOMBSTONE;
    const char *kind = tomb ? "tombstone" : "value";
    /* A framed value (docs/FORMAT.md 3.5, 4): the frame's offset in bits 0..47, its
     * member index and count above; printed apart. */
    unsigned long long off = e->ptr.offset & OFFSET_MASK;
    unsigned member = (unsigned)(e->ptr.offset >> 56), members = (unsigned)(e->ptr.offset >> 48) & 0xFF;
    /* Every string is a fixed word or hex: nothing to escape. */
    if (d->json)
        printf("{\"segment\":%u,\"offset\":%llu,\"length\":%u,\"kind\":\"%s\",\"codec\":\"%s\",\"dict\":%u,",
               e->ptr.segment_id, off, e->ptr.length, kind, codec_label(e->codec), e->dict_id);
    else
        printf("segment=%u offset=%llu length=%u kind=%s codec=%s dict=%u ", e->ptr.segment_id, off, e->ptr.length,
               kind, codec_label(e->codec), e->dict_id);
    if (members)
        printf(d->json ? "\"member\":%u,\"members\":%u," : "member=%u/%u ", member, members);
    else if (member) /* a late-bound member (3.5): no count or length in its pointer */
        printf(d->json ? "\"member\":%u,\"late\":true," : "member=%u late ", member);
    fputs(d->json ? "\"key\":\"" : "key=", stdout);
    put_hex(d, e->key, e->key_len);
    if (d->json)
        printf("\",\"value_len\":%u,\"stored_len\":%u", e->raw_len, e->stored_len);
    else
        printf(" value_len=%u", e->raw_len);
    if (tomb)
        printf(d->json ? ",\"origin\":%u" : " origin=%u", e->origin_segment);
    if (d->values) {
        fputs(d->json ? ",\"value\":\"" : " value=", stdout);
        put_hex(d, e->value, e->value_len);
        if (d->json)
            putchar('"');
    }
    puts(d->json ? "}" : "");
}

/* A damage line: at where, rc and the library's message (strict), or the bytes
 * skipped (salvage, rc 0). */
static void print_damage(dump *d, vlog_ptr where, int rc, uint64_t skipped)
{
    if (d->json) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "kind", json_object_new_string("damage"));
        json_add_u64(o, "segment", where.segment_id);
        json_add_u64(o, "offset", where.offset);
        if (rc) {
            json_add_string(o, "error", vlog_strerror(rc));
            json_add_string(o, "message", vlog_errmsg());
        } else {
            json_add_u64(o, "skipped", skipped);
        }
        json_print(o);
    } else if (rc) {
        printf("damage segment=%u offset=%llu error=\"%s\"\n", where.segment_id, (unsigned long long)where.offset,
               vlog_strerror(rc));
    } else {
        printf("damage segment=%u offset=%llu skipped=%llu\n", where.segment_id, (unsigned long long)where.offset,
               (unsigned long long)skipped);
    }
}

/* SEG:OFF, both strict decimal. */
static int parse_from(const char *cmd, const char *s, vlog_ptr *out)
{
    const char *colon = strchr(s, ':');
    char seg[32];
    if (!colon || (size_t)(colon - s) >= sizeof seg)
        return usage_error(cmd, "--from '%s': expected SEG:OFF (two decimal numbers)", s);
    memcpy(seg, s, (size_t)(colon - s));
    seg[colon - s] = '\0';
    uint64_t id, off;
    int rc = parse_u64(cmd, "--from's segment", seg, 0, 1, UINT32_MAX, &id);
    if (rc == EXIT_OK)
        rc = parse_u64(cmd, "--from's offset", colon + 1, 0, FIRST_RECORD_OFFSET, INT64_MAX, &off);
    if (rc == EXIT_OK)
        *out = (vlog_ptr){ (uint32_t)id, 0, off };
    return rc;
}

/* --from naming a segment above every one of the log names no record (exit 1, as
 * the help says); the iterator itself starts such a walk empty, for a follower. */
static int check_from(const char *cmd, vlog *log, const char *dir, vlog_ptr from)
{
    vlog_segment_info *segs;
    size_t n;
    int rc = list_segments(log, &segs, &n);
    if (rc != VLOG_OK) return print_lib_error(cmd, "vlog_segments", dir, rc);
    uint32_t last = n ? segs[n - 1].id : 0;
    uint64_t end = 0; /* the named segment's end, 0 when it is gone */
    for (size_t i = 0; i < n; i++)
        if (segs[i].id == from.segment_id) end = FIRST_RECORD_OFFSET + segs[i].data_bytes;
    free(segs);
    if (from.segment_id > last) {
        cmd_error(cmd, "--from %u:%llu names no record of %s: its last segment is %u", from.segment_id,
                  (unsigned long long)from.offset, dir, last);
        return EXIT_DATA;
    }
    if (end != 0 && from.offset > end) {
        cmd_error(cmd, "--from %u:%llu names no record of %s: segment %u's records end at offset %llu",
                  from.segment_id, (unsigned long long)from.offset, dir, from.segment_id, (unsigned long long)end);
        return EXIT_DATA;
    }
    return EXIT_OK;
}

/* Whether a record starts at `at`, by a metadata-only walk of its segment from the
 * first record: 1 one does, 0 none does (*over: the record that covers `at`, or the
 * segment's last one), -1 unknown (the walk failed before it). Only run after the
 * walk failed at --from's offset, so a good --from costs nothing more. */
static int record_starts_at(vlog *log, vlog_ptr at, vlog_ptr *over)
{
    vlog_iter_options o;
    vlog_iter_options_init(&o);
    o.start = (vlog_ptr){ at.segment_id, 0, FIRST_RECORD_OFFSET };
    vlog_iter *it;
    if (vlog_iter_open(log, &o, &it) != VLOG_OK) return -1;
    vlog_iter_entry e;
    int rc, found = -1;
    *over = (vlog_ptr){ 0, 0, 0 };
    while ((rc = vlog_iter_next(it, &e)) == VLOG_OK || rc == VLOG_ENODICT) {
        uint64_t off = e.ptr.offset & OFFSET_MASK;
        if (e.ptr.segment_id != at.segment_id || off > at.offset) {
            found = over->segment_id ? 0 : -1;
            break;
        }
        if (off == at.offset) {
            found = 1;
            break;
        }
        *over = (vlog_ptr){ e.ptr.segment_id, e.ptr.length, off };
        if (off + e.ptr.length > at.offset) {
            found = 0;
            break;
        }
    }
    if (rc == VLOG_EEND && over->segment_id) found = 0; /* past the last record */
    vlog_iter_close(it);
    return found;
}

/* The walk: every entry printed; a damage line for each skip or the failure. */
static int walk(dump *d, vlog *log, const char *dir, const vlog_iter_options *o)
{
    static const char cmd[] = "dump";
    vlog_iter *it;
    int rc = o->start.segment_id ? check_from(cmd, log, dir, o->start) : EXIT_OK;
    if (rc != EXIT_OK) return rc;
    rc = vlog_iter_open(log, o, &it);
    if (rc != VLOG_OK)
        return print_lib_error(cmd, "vlog_iter_open", dir, rc);
    vlog_iter_entry e;
    uint64_t reported = 0, records = 0;
    vlog_ptr prev_end = o->start;
    int status = EXIT_OK;
    while ((rc = vlog_iter_next(it, &e)) == VLOG_OK || rc == VLOG_ENODICT) {
        if (e.skipped_bytes) {
            /* The skip began where the previous record ended (in this segment or an
             * earlier one); it is reported at the record the walk resumed with. */
            print_damage(d, e.ptr, 0, e.skipped_bytes);
            reported += e.skipped_bytes;
            status = EXIT_DATA;
        }
        if (rc == VLOG_ENODICT) { /* this record only: the walk goes on */
            print_damage(d, e.ptr, rc, 0);
            cmd_error(cmd, "%s: %s", vlog_strerror(rc), vlog_errmsg());
            status = EXIT_DATA;
            continue;
        }
        print_entry(d, &e);
        records++;
        prev_end = (vlog_ptr){ e.ptr.segment_id, 0, e.ptr.offset + e.ptr.length };
        if (ferror(stdout))
            break; /* cmd_finish reports it */
    }
    vlog_ptr over;
    int at_from = rc != VLOG_EEND && rc != VLOG_OK && records == 0 && o->start.segment_id &&
                  e.ptr.segment_id == o->start.segment_id && e.ptr.offset == o->start.offset;
    if (at_from && !o->salvage && record_starts_at(log, o->start, &over) == 0) {
        /* A wrong --from, not damage: no damage line. */
        cmd_error(cmd, "--from %u:%llu is not a record's start in %s: the record at offset %llu (%u bytes) %s it; "
                  "'vlog dump %s' lists the starts", o->start.segment_id, (unsigned long long)o->start.offset, dir,
                  (unsigned long long)over.offset, over.length,
                  over.offset + over.length > o->start.offset ? "covers" : "ends before", dir);
        status = EXIT_DATA;
    } else if (rc != VLOG_EEND && rc != VLOG_OK) {
        print_damage(d, e.ptr, rc, 0);
        status = print_lib_error(cmd, "vlog_iter_next", dir, rc);
        if (at_from)
            cmd_error(cmd, "--from %u:%llu: no valid record starts there (a damaged record, or not a record's "
                      "start); 'vlog dump %s' lists the starts", o->start.segment_id,
                      (unsigned long long)o->start.offset, dir);
    } else if (vlog_iter_skipped(it) > reported) {
        /* Damage at the very end: no record followed it. */
        print_damage(d, prev_end, 0, vlog_iter_skipped(it) - reported);
        status = EXIT_DATA;
    }
    if (status == EXIT_DATA && vlog_iter_skipped(it))
        cmd_error(cmd, "%s: %llu damaged bytes skipped (--salvage)", dir, (unsigned long long)vlog_iter_skipped(it));
    if (d->json) {
        /* The last line: the run's summary (what every --json run ends with). */
        json_object *s = json_object_new_object();
        json_add_string(s, "command", cmd);
        json_object_object_add(s, "ok", json_object_new_boolean(status == EXIT_OK));
        json_object_object_add(s, "exit_status", json_object_new_int(status));
        json_add_u64(s, "records", records);
        json_add_u64(s, "skipped_bytes", vlog_iter_skipped(it));
        json_print(s);
    }
    vlog_iter_close(it);
    return status;
}

int cmd_dump(int argc, char **argv)
{
    static const char cmd[] = "dump";
    enum { OPT_JSON = 256, OPT_VALUES, OPT_FROM, OPT_SALVAGE };
    static const struct option longopts[] = {
        {"json", no_argument, NULL, OPT_JSON},
        {"values", no_argument, NULL, OPT_VALUES},
        {"from", required_argument, NULL, OPT_FROM},
        {"salvage", no_argument, NULL, OPT_SALVAGE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    static dump d;
    memset(&d, 0, sizeof d);
    vlog_iter_options o;
    vlog_iter_options_init(&o);
    int c, rc;
    d.json = cmd_scan_json(argc, argv, ":h", longopts, OPT_JSON);
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_JSON: break; /* cmd_scan_json saw it */
        case OPT_VALUES: d.values = 1; break;
        case OPT_SALVAGE: o.salvage = 1; break;
        case OPT_FROM:
            if ((rc = parse_from(cmd, optarg, &o.start)) != EXIT_OK)
                return rc;
            break;
        case 'h': return show_help(cmd_dump_help);
        default: return bad_option(cmd, c, argv);
        }
    }
    o.values = d.values;
    const char *dir;
    if ((rc = one_operand(cmd, "DIR", argc, argv, &dir)) != EXIT_OK)
        return rc;
    vlog *log = open_existing(cmd, dir, &rc);
    if (log == NULL)
        return rc;
    if (presence_of(log, dir, NULL) == LOG_NONE) {
        vlog_close(log);
        return print_no_log(cmd, dir);
    }
    rc = walk(&d, log, dir, &o);
    return close_log(cmd, log, dir, rc);
}
