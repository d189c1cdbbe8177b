/* An attack on the hold between calls (live_hold.c): a POSIX timer whose
 * signal is SIGCONT, with a handler so that the kernel does not park it
 * as ignored, continues this process every 100 ms after it was stopped;
 * each time it runs it adds a line to OUT. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void on_cont(int sig)
{
    (void)sig;
}

int main(int argc, char **argv)
{
    struct sigevent ev;
    struct itimerspec every = {{0, 100000000}, {0, 100000000}};
    timer_t t;

    if (argc < 2)
        return 2;
    signal(SIGCONT, on_cont);
    memset(&ev, 0, sizeof(ev));
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = SIGCONT;
    if (timer_create(CLOCK_MONOTONIC, &ev, &t) != 0) {
        perror("timer_create");
        return 1;
    }
    timer_settime(t, 0, &every, NULL);
    for (;;) {
        FILE *f = fopen(argv[1], "a");
        if (f) {
            fprintf(f, "%ld\n", (long)time(NULL));
            fclose(f);
        }
        usleep(200000);
    }
}
