/* fuzz_dict — the dictionary file loader (docs/FORMAT.md §6, valuelog/dict.h):
 * dict_file_check on the input as a whole file, then dict_set_load over a directory
 * holding the input as DDDDDDDDDD.vdict.
 *
 * The file's id (its name) is the dict_id field of the input's header when there is
 * one and it is not 0, else 1, so that valid files pass and the fuzzer meets every
 * check. Checks: a file that passes encodes back to its header and its id is its
 * content's; a file named with another id fails; the loader and dict_file_check
 * agree (a good file is a dictionary with the same content, a bad one is listed as
 * bad with the same error, and its id gives VLOG_ENODICT); every allocation goes
 * through the hook, none above 64 KiB + the small change, and all are freed. */
#include <stdint.h>
#include <string.h>

#include "tests/fuzz/fuzz_common.h"
#include "valuelog/dict.h"
#include "valuelog/format.h"
#include "valuelog/valuelog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A dictionary file is at most 32 + 64 KiB; LZ4's stream state is about 16 KiB. */
static fz_alloc A = { DICT_FILE_HEADER_BYTES + DICT_MAX_BYTES + (64u << 10), 0, 0, 0, 0, { 0 }, { 0 } };
static cache_alloc hook = { fz_alloc_fn, fz_free_fn, &A };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > DICT_FILE_HEADER_BYTES + DICT_MAX_BYTES + 4096) return 0;
    uint32_t id = size >= 16 ? le32_get(data + 12) : 0;
    if (id == 0) id = 1;

    const uint8_t *content = NULL;
    size_t len = 0;
    const char *what = NULL;
    int rc = dict_file_check(data, size, id, &content, &len, &what);
    FZ_CHECK(rc == 0 || rc == VLOG_EBADMAGIC || rc == VLOG_EVERSION || rc == VLOG_EINCOMPLETE ||
                 rc == VLOG_ECORRUPT, "dict_file_check: rc %d", rc);
    if (rc) {
        FZ_CHECK(what != NULL, "an error without a reason");
    } else {
        FZ_CHECK(content == data + DICT_FILE_HEADER_BYTES && len == size - DICT_FILE_HEADER_BYTES,
                 "content is not the file's tail");
        FZ_CHECK(len >= 1 && len <= DICT_MAX_BYTES, "content of %zu bytes accepted", len);
        FZ_CHECK(dict_content_id(content, len) == id, "accepted id %u for content whose id is %u", id,
                 dict_content_id(content, len));
        uint8_t again[DICT_FILE_HEADER_BYTES];
        dict_header_encode(again, content, (uint32_t)len);
        FZ_CHECK(memcmp(again, data, DICT_FILE_HEADER_BYTES) == 0, "a valid file does not encode back to its header");
        const uint8_t *c2;
        size_t l2;
        FZ_CHECK(dict_file_check(data, size, id == UINT32_MAX ? 1 : id + 1, &c2, &l2, &what) == VLOG_ECORRUPT,
                 "a file accepted under another name's id");
    }

    /* The loader, over a directory holding the file. */
    char dir[512], path[600], name[DICT_FILE_NAME_BYTES];
    fz_fresh_dir(dir, sizeof dir, "dict");
    dict_file_name(name, id);
    fz_path(path, sizeof path, dir, name);
    fz_write_file(path, data, size);
    dict_set *set = NULL;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    FZ_CHECK(dfd >= 0, "open of %s", dir);
    int lrc = dict_set_load(dfd, dir, &hook, &set);
    FZ_CHECK(lrc == 0 && set, "dict_set_load failed (%d: %s): a bad file must not fail the load", lrc,
             vlog_errmsg());
    const codec_dict *d = NULL;
    int grc = dict_set_get(set, id, &d);
    if (rc == 0) {
        FZ_CHECK(dict_set_count(set) == 1 && dict_set_bad_count(set) == 0, "a good file not loaded");
        FZ_CHECK(grc == 0 && d && codec_dict_id(d) == id, "dict_set_get of a good file: %d", grc);
        size_t dl;
        const uint8_t *dc = codec_dict_content(d, &dl);
        FZ_CHECK(dl == len && memcmp(dc, content, len) == 0, "loaded content differs from the file's");
    } else {
        FZ_CHECK(dict_set_count(set) == 0 && dict_set_bad_count(set) == 1, "a bad file (%d, %s) loaded", rc, what);
        const dict_bad *b = dict_set_bad_at(set, 0);
        FZ_CHECK(b->id == id && b->error == rc, "bad list says id %u error %d, dict_file_check said %d", b->id,
                 b->error, rc);
        FZ_CHECK(grc == VLOG_ENODICT, "dict_set_get of a bad file: %d", grc);
    }
    dict_set_destroy(set);
    close(dfd);
    fz_alloc_check_empty(&A, "dict_set_destroy");
    fz_rm_flat(dir);
    return 0;
}
