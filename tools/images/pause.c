/* The pod sandbox's process (registry.k8s.io/pause): holds the pod's namespaces, does nothing,
 * reaps the zombies it inherits as PID 1 of a shared PID namespace, and exits on SIGINT/SIGTERM.
 * Built static (gcc -static) so the image is this one file. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) {
  (void)sig;
  _exit(0);
}

static void reap(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "-v") == 0) {
    puts("pause (blueprint-operator tools/images)");
    return 0;
  }
  struct sigaction on_stop = {0}, on_child = {0};
  on_stop.sa_handler = stop;
  on_child.sa_handler = reap;
  on_child.sa_flags = SA_NOCLDSTOP | SA_RESTART;
  if (sigaction(SIGINT, &on_stop, NULL) || sigaction(SIGTERM, &on_stop, NULL) ||
      sigaction(SIGCHLD, &on_child, NULL)) {
    perror("pause: sigaction");
    return 1;
  }
  for (;;)
    pause();
}
