/* log_fixture.c — see log_fixture.h. */
#include "tests/log_fixture.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/testutil.h"
#include "valuelog/crc32c.h"
#include "valuelog/format.h"
#include "valuelog/valuelog.h"

void make_items(uint64_t first_id, size_t n, const size_t *lens, vlog_item *items, char (*keys)[TU_KEY_BYTES + 1],
                uint8_t **vals)
{
    for (size_t i = 0; i < n; i++) {
        tu_key(first_id + i, keys[i]);
        vals[i] = tu_val(first_id + i, lens[i]);
        items[i] = (vlog_item){ keys[i], TU_KEY_BYTES, vals[i], lens[i] };
    }
}

int get_rc(vlog *log, vlog_ptr p)
{
    uint8_t buf[8192];
    size_t got = 0;
    return vlog_get(log, p, buf, sizeof buf, &got);
}
