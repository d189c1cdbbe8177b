--- csrc/exec/run_watch.c fails closed when an allocation fails (issue 38,
--- item 8): a protected name or a secret pattern it could not keep stops
--- the command at the first check, rather than going unwatched. A driver
--- links run_watch.c with malloc and realloc wrapped (ld --wrap) to fail
--- the k-th allocation of the watch's set-up, for every k. A name saved
--- by rename is EXEC_WATCH_REPLACED (3), a new secret name and a stop for
--- memory EXEC_WATCH_STOP (1).
local h = require("support.helpers")

local DRIVER = [[
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "run_watch.h"

void *__real_malloc(size_t n);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_realloc(void *p, size_t n);

/* the test's own: which allocation fails (-1: none), whether one did */
static long countdown = -1;
static int fired;

static int fail_now(void)
{
    if (countdown < 0)
        return 0;
    if (countdown-- == 0) {
        fired = 1;
        return 1;
    }
    return 0;
}

void *__wrap_malloc(size_t n)
{
    return fail_now() ? NULL : __real_malloc(n);
}

void *__wrap_realloc(void *p, size_t n)
{
    return fail_now() ? NULL : __real_realloc(p, n);
}

/* DIR K MODE: DIR holds the protected file f; the K-th allocation of the
 * set-up fails; MODE "replace" saves f by rename, "secret" makes .env.local */
int main(int argc, char **argv)
{
    fs_vec masks;
    exec_check_plan plan;
    exec_run_watch w;
    char path[4096], other[4200], why[4500] = "";
    FILE *f;
    int rc;

    if (argc != 4)
        return 2;
    memset(&plan, 0, sizeof(plan)); /* every list empty (fs_vec_init) */
    fs_vec_init(&masks);
    snprintf(path, sizeof(path), "%s/f", argv[1]);
    if (fs_vec_push_str(&plan.ro, path) || fs_vec_push_str(&plan.patterns, ".env*") ||
        fs_vec_push_str(&plan.secrets, argv[1]))
        return 2;
    countdown = atol(argv[2]);
    exec_run_watch_init(&w, &plan, &masks, 0);
    countdown = -1;
    if (strcmp(argv[3], "replace") == 0) {
        snprintf(other, sizeof(other), "%s/f.new", argv[1]);
        f = fopen(other, "w");
        if (!f || fputs("new\n", f) < 0 || fclose(f) != 0 || rename(other, path) != 0)
            return 2;
    } else {
        snprintf(other, sizeof(other), "%s/.env.local", argv[1]);
        f = fopen(other, "w");
        if (!f || fclose(f) != 0)
            return 2;
    }
    rc = exec_run_watch_check(&w, 0, why, sizeof(why));
    printf("fired=%d wait=%ld rc=%d why=%s\n", fired, exec_run_watch_wait_ms(&w, 0), rc, why);
    exec_run_watch_free(&w);
    fs_vec_free(&plan.ro);
    fs_vec_free(&plan.patterns);
    fs_vec_free(&plan.secrets);
    fs_vec_free(&masks);
    return 0;
}
]]

describe("run_watch out of memory", function()
  local dir, driver

  setup(function()
    dir = h.tmpdir()
    h.write(dir .. "/driver.c", DRIVER)
    driver = dir .. "/driver"
    local argv = { "cc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-Icsrc/shared", "-Icsrc/exec" }
    argv[#argv + 1] = "csrc/exec/run_watch.c"
    local ls = io.popen("ls csrc/shared/*.c")
    for name in ls:read("*a"):gmatch("[^\n]+") do
      argv[#argv + 1] = name
    end
    ls:close()
    for _, word in ipairs({ dir .. "/driver.c", "-Wl,--wrap=malloc", "-Wl,--wrap=realloc", "-o", driver }) do
      argv[#argv + 1] = word
    end
    local built = h.run(argv)
    assert.are.equal(0, built.code, built.stderr)
  end)

  teardown(function()
    h.rmdir(dir)
  end)

  local function run(k, mode)
    local work = dir .. "/w-" .. mode .. "-" .. k
    h.sh("rm -rf " .. h.shell_quote(work) .. " && mkdir " .. h.shell_quote(work))
    h.write(work .. "/f", "old\n")
    local out = h.run({ driver, work, tostring(k), mode })
    assert.are.equal(0, out.code, out.stderr)
    local fired, wait, rc, why = out.stdout:match("^fired=(%d) wait=(%-?%d+) rc=(%d) why=(.-)\n$")
    assert.truthy(fired, out.stdout)
    return fired == "1", tonumber(wait), tonumber(rc), why
  end

  it("catches the change with no failure (control: the watch sees it)", function()
    local fired, _, rc, why = run(-1, "replace")
    assert.is_false(fired)
    assert.are.equal(3, rc, "EXEC_WATCH_REPLACED: the caller stops, or protects it again (live_reprotect.h)")
    assert.matches("was replaced", why)
    fired, _, rc, why = run(-1, "secret")
    assert.is_false(fired)
    assert.are.equal(1, rc)
    assert.matches("secret_files hides, was created", why)
  end)

  it("stops the command whichever allocation of the set-up fails", function()
    local stopped_for_memory = 0
    for _, mode in ipairs({ "replace", "secret" }) do
      local k = 0
      while true do
        local fired, wait, rc, why = run(k, mode)
        if not fired then
          break -- past the set-up's last allocation
        end
        if why:match("out of memory") then
          assert.are.equal(1, rc, "EXEC_WATCH_STOP")
          stopped_for_memory = stopped_for_memory + 1
          assert.are.equal(0, wait, "the stop is due at once")
        else
          -- the change was seen all the same
          assert.are.equal(mode == "replace" and 3 or 1, rc, mode .. " with allocation " .. k .. " failing: " .. why)
        end
        k = k + 1
        assert.is_true(k < 200)
      end
    end
    assert.is_true(stopped_for_memory > 0)
  end)
end)
