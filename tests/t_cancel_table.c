/* Cancellation at every cancellation point a test can drive, in a weft
   thread.  One table row per point; each row is run as
     pending   cancellation requested while disabled, then enabled, then
               the call (set up so that it would NOT block): the thread
               must be cancelled before the call has any effect (the data
               stays in the pipe, the child stays unreaped, ...);
     deferred  the thread sleeps in the call (seen in the kernel: state
               'S' in /proc/self/task/TID/stat and the expected system
               call in .../syscall), then is cancelled;
     async     the same with PTHREAD_CANCEL_ASYNCHRONOUS (for the
               futex-based points, which are not async-cancel-safe,
               weft runs the call as deferred and restores the type).
   Every case must give PTHREAD_CANCELED at the join and run the cleanup
   handler.  A thread that is not cancelled is released (signal, data,
   post...) and the case fails with the point's name.

   A row flagged NOT_YET (none today) is a point weft does not make
   cancellable yet: run and reported as KNOWN-FAIL without failing the
   test, unless weft serves pthread_testcancel or WEFT_CANCEL_STRICT=1;
   one that passes is reported as XPASS.
   connect: a blocking connect to a listening unix socket whose backlog
   is full sleeps in the kernel, so it is driven like the others.
   fcntl(F_SETLKW) and lockf: the conflicting POSIX lock is held by a
   child process (such locks belong to a process); their pending case
   has no effect to check from inside the process.  close, fsync and
   fdatasync cannot be made to sleep: pending case only.
   `t_cancel_table NAME` runs one row. */
#include <dirent.h>
#include <fcntl.h>
#include <mqueue.h>
#include <poll.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/msg.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness.h"

enum mode { PENDING, DEFERRED, ASYNC };
static const char *mode_name[] = {"pending", "deferred", "async"};

/* Everything a point may need; zeroed per case. */
struct pc {
	int p[2];		/* a pipe */
	int sv[2];		/* a unix stream socket pair */
	int lfd, cfd, xfd;	/* listener, client, extra */
	struct sockaddr_un addr;
	pid_t child;
	int cp[2];		/* pipe holding the child */
	int msq;
	mqd_t mq;
	sem_t sem;
	pthread_mutex_t m;
	pthread_cond_t c;
	int cond_go;
	int cleanup_unlock; /* pthread_mutex_unlock's result in the handler */
	pthread_t joinee;
	int jp[2];
	int epfd;
	char path[64];
	int nfd;		/* open descriptors before the case */
	long t0;
};

struct point {
	const char *name;
	int (*setup)(struct pc *, enum mode); /* 0, or -1 with FAIL done */
	long (*call)(struct pc *);	     /* the cancellation point */
	int (*check_pending)(struct pc *);   /* after a pending case: 1 if no effect */
	void (*release)(struct pc *);	     /* unblocks an uncancelled call */
	void (*teardown)(struct pc *);
	int nr[4];			     /* system calls it sleeps in; -1 ends */
	unsigned flags;
};
#define NO_BLOCK 1u /* cannot be made to sleep: pending case only */
#define NO_ASYNC 2u /* not an async-cancel-safe call: no async case */
#define NOT_YET 4u  /* not a cancellation point in weft today */

#define SIG_RELEASE SIGURG /* handler without SA_RESTART: EINTR */

static void on_release(int sig)
{
	(void)sig;
}

static void kick(struct pc *x, pthread_t t)
{
	(void)x;
	pthread_kill(t, SIG_RELEASE);
}

/* ---------------------------------------------------------- helpers */

static int fionread(int fd)
{
	int n = -1;

	ioctl(fd, FIONREAD, &n);
	return n;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static void close_all(struct pc *x)
{
	int *fds[] = {&x->p[0], &x->p[1], &x->sv[0], &x->sv[1], &x->lfd,
		      &x->cfd, &x->xfd, &x->cp[0], &x->cp[1], &x->jp[0],
		      &x->jp[1], &x->epfd};

	for (size_t i = 0; i < sizeof fds / sizeof *fds; i++)
		if (*fds[i] > 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
}

static void fill_pipe(int wfd)
{
	char buf[4096] = {0};
	int fl = fcntl(wfd, F_GETFL);

	fcntl(wfd, F_SETPIPE_SZ, 4096);
	fcntl(wfd, F_SETFL, fl | O_NONBLOCK);
	while (write(wfd, buf, sizeof buf) > 0)
		;
	while (write(wfd, buf, 1) > 0)
		;
	fcntl(wfd, F_SETFL, fl);
}

/* ------------------------------------------------------------- pipes */

static int s_pipe(struct pc *x, enum mode m)
{
	REQUIRE(pipe(x->p) == 0, "pipe");
	if (m == PENDING) /* the call would not block */
		REQUIRE(write(x->p[1], "d", 1) == 1, "write");
	return 0;
}
static int s_pipe_full(struct pc *x, enum mode m)
{
	REQUIRE(pipe(x->p) == 0, "pipe");
	if (m != PENDING)
		fill_pipe(x->p[1]);
	return 0;
}
static int data_kept(struct pc *x)
{
	return fionread(x->p[0]) == 1;
}
static int nothing_written(struct pc *x)
{
	return fionread(x->p[0]) == 0;
}

static long c_read(struct pc *x)
{
	char c;
	return read(x->p[0], &c, 1);
}
static long c_readv(struct pc *x)
{
	char c;
	struct iovec v = {&c, 1};
	return readv(x->p[0], &v, 1);
}
static long c_write(struct pc *x)
{
	return write(x->p[1], "w", 1);
}
static long c_writev(struct pc *x)
{
	struct iovec v = {"w", 1};
	return writev(x->p[1], &v, 1);
}
static long c_poll(struct pc *x)
{
	struct pollfd pf = {.fd = x->p[0], .events = POLLIN};
	return poll(&pf, 1, -1);
}
static long c_ppoll(struct pc *x)
{
	struct pollfd pf = {.fd = x->p[0], .events = POLLIN};
	return ppoll(&pf, 1, NULL, NULL);
}
static long c_select(struct pc *x)
{
	fd_set r;
	FD_ZERO(&r);
	FD_SET(x->p[0], &r);
	return select(x->p[0] + 1, &r, NULL, NULL, NULL);
}
static long c_pselect(struct pc *x)
{
	fd_set r;
	FD_ZERO(&r);
	FD_SET(x->p[0], &r);
	return pselect(x->p[0] + 1, &r, NULL, NULL, NULL, NULL);
}
static int s_epoll(struct pc *x, enum mode m)
{
	struct epoll_event ev = {.events = EPOLLIN};

	s_pipe(x, m);
	x->epfd = epoll_create1(EPOLL_CLOEXEC);
	REQUIRE(x->epfd >= 0, "epoll_create1");
	REQUIRE(epoll_ctl(x->epfd, EPOLL_CTL_ADD, x->p[0], &ev) == 0, "epoll_ctl");
	return 0;
}
static long c_epoll_wait(struct pc *x)
{
	struct epoll_event ev;
	return epoll_wait(x->epfd, &ev, 1, -1);
}
static long c_epoll_pwait(struct pc *x)
{
	struct epoll_event ev;
	return epoll_pwait(x->epfd, &ev, 1, -1, NULL);
}

/* ------------------------------------------------------------ sleeps */

static int s_clock(struct pc *x, enum mode m)
{
	(void)m;
	x->t0 = mono_ns();
	return 0;
}
static int slept_little(struct pc *x)
{
	return mono_ns() - x->t0 < 2000000000L;
}
static long c_nanosleep(struct pc *x)
{
	(void)x;
	return nanosleep(&(struct timespec){10, 0}, NULL);
}
static long c_clock_nanosleep(struct pc *x)
{
	(void)x;
	return clock_nanosleep(CLOCK_MONOTONIC, 0, &(struct timespec){10, 0}, NULL);
}
static long c_sleep(struct pc *x)
{
	(void)x;
	return sleep(10);
}
static long c_usleep(struct pc *x)
{
	(void)x;
	return usleep(9000000);
}
static long c_pause(struct pc *x)
{
	(void)x;
	return pause();
}
static long c_sigsuspend(struct pc *x)
{
	sigset_t s;

	(void)x;
	pthread_sigmask(SIG_BLOCK, NULL, &s); /* SIGUSR1 stays blocked */
	return sigsuspend(&s);
}

/* ----------------------------------------------------------- sockets */

static void unix_addr(struct pc *x)
{
	x->addr.sun_family = AF_UNIX;
	/* abstract name: nothing to clean up in the file system */
	snprintf(x->addr.sun_path + 1, sizeof x->addr.sun_path - 1,
		 "weft-cp-%d-%ld", (int)getpid(), mono_ns());
}

static int s_listen(struct pc *x, enum mode m)
{
	unix_addr(x);
	x->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	REQUIRE(x->lfd >= 0, "socket");
	REQUIRE(bind(x->lfd, (struct sockaddr *)&x->addr, sizeof x->addr) == 0,
		"bind");
	REQUIRE(listen(x->lfd, 8) == 0, "listen");
	if (m == PENDING) { /* a connection waits */
		x->cfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		REQUIRE(connect(x->cfd, (struct sockaddr *)&x->addr,
				sizeof x->addr) == 0,
			"connect");
	}
	return 0;
}
static long c_accept(struct pc *x)
{
	return accept(x->lfd, NULL, NULL);
}
static long c_accept4(struct pc *x)
{
	return accept4(x->lfd, NULL, NULL, SOCK_CLOEXEC);
}
static int conn_kept(struct pc *x)
{
	int fd;

	/* SOCK_NONBLOCK would apply to the accepted socket only. */
	fcntl(x->lfd, F_SETFL, fcntl(x->lfd, F_GETFL) | O_NONBLOCK);
	fd = accept4(x->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}
static void r_connect_in(struct pc *x)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (connect(fd, (struct sockaddr *)&x->addr, sizeof x->addr) != 0)
		FAIL("release connect: %s", strerror(errno));
	x->xfd = fd;
}

/* connect: backlog 0 admits one connection; the next blocks. */
static int s_connect(struct pc *x, enum mode m)
{
	unix_addr(x);
	x->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	REQUIRE(bind(x->lfd, (struct sockaddr *)&x->addr, sizeof x->addr) == 0,
		"bind");
	REQUIRE(listen(x->lfd, m == PENDING ? 8 : 0) == 0, "listen");
	if (m != PENDING) {
		x->xfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		REQUIRE(connect(x->xfd, (struct sockaddr *)&x->addr,
				sizeof x->addr) == 0,
			"filler connect");
	}
	x->cfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	REQUIRE(x->cfd >= 0, "socket");
	return 0;
}
static long c_connect(struct pc *x)
{
	return connect(x->cfd, (struct sockaddr *)&x->addr, sizeof x->addr);
}
static int no_conn(struct pc *x)
{
	return !conn_kept(x);
}
static void r_accept_one(struct pc *x)
{
	int fd = accept4(x->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0)
		close(fd);
}

static int s_pair(struct pc *x, enum mode m)
{
	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, x->sv) == 0,
		"socketpair");
	if (m == PENDING)
		REQUIRE(write(x->sv[1], "d", 1) == 1, "write");
	return 0;
}
static int s_pair_full(struct pc *x, enum mode m)
{
	int sz = 4096;
	char buf[1024] = {0};

	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, x->sv) == 0,
		"socketpair");
	setsockopt(x->sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
	if (m != PENDING) {
		while (send(x->sv[0], buf, sizeof buf, MSG_DONTWAIT) > 0)
			;
		while (send(x->sv[0], buf, 1, MSG_DONTWAIT) > 0)
			;
	}
	return 0;
}
static int sock_kept(struct pc *x)
{
	return fionread(x->sv[0]) == 1;
}
static int sock_nothing_sent(struct pc *x)
{
	return fionread(x->sv[1]) == 0;
}
static void r_sock_data(struct pc *x)
{
	if (write(x->sv[1], "r", 1) != 1)
		FAIL("release write");
}
static long c_recv(struct pc *x)
{
	char c;
	return recv(x->sv[0], &c, 1, 0);
}
static long c_recvfrom(struct pc *x)
{
	char c;
	return recvfrom(x->sv[0], &c, 1, 0, NULL, NULL);
}
static long c_recvmsg(struct pc *x)
{
	char c;
	struct iovec v = {&c, 1};
	struct msghdr h = {.msg_iov = &v, .msg_iovlen = 1};
	return recvmsg(x->sv[0], &h, 0);
}
static long c_recvmmsg(struct pc *x)
{
	char c;
	struct iovec v = {&c, 1};
	struct mmsghdr h = {.msg_hdr = {.msg_iov = &v, .msg_iovlen = 1}};
	return recvmmsg(x->sv[0], &h, 1, 0, NULL);
}
static long c_sendmmsg(struct pc *x)
{
	struct iovec v = {"s", 1};
	struct mmsghdr h = {.msg_hdr = {.msg_iov = &v, .msg_iovlen = 1}};
	return sendmmsg(x->sv[0], &h, 1, MSG_NOSIGNAL);
}
static long c_send(struct pc *x)
{
	return send(x->sv[0], "s", 1, MSG_NOSIGNAL);
}
static long c_sendto(struct pc *x)
{
	return sendto(x->sv[0], "s", 1, MSG_NOSIGNAL, NULL, 0);
}
static long c_sendmsg(struct pc *x)
{
	struct iovec v = {"s", 1};
	struct msghdr h = {.msg_iov = &v, .msg_iovlen = 1};
	return sendmsg(x->sv[0], &h, MSG_NOSIGNAL);
}

/* ------------------------------------------------------ files, fifos */

static int s_fifo(struct pc *x, enum mode m)
{
	x->nfd = count_fds();
	if (m == PENDING) {
		snprintf(x->path, sizeof x->path, "/dev/null");
		return 0;
	}
	snprintf(x->path, sizeof x->path, "/tmp/weft-cp-fifo-%d", (int)getpid());
	unlink(x->path);
	REQUIRE(mkfifo(x->path, 0600) == 0, "mkfifo");
	return 0;
}
static long c_open(struct pc *x)
{
	return open(x->path, O_RDONLY | O_CLOEXEC);
}
static long c_openat(struct pc *x)
{
	return openat(AT_FDCWD, x->path, O_RDONLY | O_CLOEXEC);
}
static int no_new_fd(struct pc *x)
{
	return count_fds() == x->nfd;
}
static void r_fifo_writer(struct pc *x)
{
	x->xfd = open(x->path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
}
static void t_fifo(struct pc *x)
{
	if (strncmp(x->path, "/tmp/", 5) == 0)
		unlink(x->path);
}

static int s_dupfd(struct pc *x, enum mode m)
{
	(void)m;
	x->xfd = dup(0);
	REQUIRE(x->xfd >= 0, "dup");
	return 0;
}
static long c_close(struct pc *x)
{
	return close(x->xfd);
}
static int still_open(struct pc *x)
{
	return fcntl(x->xfd, F_GETFD) != -1;
}

static int s_tmpfile(struct pc *x, enum mode m)
{
	(void)m;
	snprintf(x->path, sizeof x->path, "/tmp/weft-cp-file-%d", (int)getpid());
	x->xfd = open(x->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	REQUIRE(x->xfd >= 0, "open tmp");
	unlink(x->path);
	return 0;
}
static long c_fsync(struct pc *x)
{
	return fsync(x->xfd);
}
static long c_fdatasync(struct pc *x)
{
	return fdatasync(x->xfd);
}

/* Open-file-description locks conflict between two opens of one file,
   even inside one process. */
static int s_ofd(struct pc *x, enum mode m)
{
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};

	s_tmpfile(x, m);
	snprintf(x->path, sizeof x->path, "/proc/self/fd/%d", x->xfd);
	x->cfd = open(x->path, O_RDWR | O_CLOEXEC);
	REQUIRE(x->cfd >= 0, "reopen");
	if (m != PENDING)
		REQUIRE(fcntl(x->xfd, F_OFD_SETLK, &fl) == 0, "lock");
	return 0;
}
static long c_ofd_setlkw(struct pc *x)
{
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	return fcntl(x->cfd, F_OFD_SETLKW, &fl);
}
static int not_locked(struct pc *x)
{
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};

	return fcntl(x->xfd, F_OFD_GETLK, &fl) == 0 && fl.l_type == F_UNLCK;
}
static void r_ofd_unlock(struct pc *x)
{
	struct flock fl = {.l_type = F_UNLCK, .l_whence = SEEK_SET};
	fcntl(x->xfd, F_OFD_SETLK, &fl);
}

/* ---------------------------------------------------------- children */

/* A child that stays until its pipe is written (blocked cases), or has
   exited already, unreaped (pending). */
static int s_child(struct pc *x, enum mode m)
{
	siginfo_t si;

	REQUIRE(pipe2(x->cp, O_CLOEXEC) == 0, "pipe");
	x->child = fork();
	REQUIRE(x->child >= 0, "fork");
	if (x->child == 0) {
		char c;
		if (m != PENDING)
			(void)!read(x->cp[0], &c, 1);
		_exit(0);
	}
	if (m == PENDING) /* a zombie: waits without reaping */
		REQUIRE(waitid(P_PID, x->child, &si, WEXITED | WNOWAIT) == 0,
			"waitid");
	return 0;
}
static long c_waitpid(struct pc *x)
{
	return waitpid(x->child, NULL, 0);
}
static long c_wait(struct pc *x)
{
	(void)x;
	return wait(NULL);
}
static long c_waitid(struct pc *x)
{
	siginfo_t si;
	return waitid(P_PID, x->child, &si, WEXITED);
}
static long c_wait3(struct pc *x)
{
	(void)x;
	return wait3(NULL, 0, NULL);
}
static long c_wait4(struct pc *x)
{
	return wait4(x->child, NULL, 0, NULL);
}
static int child_unreaped(struct pc *x)
{
	return waitpid(x->child, NULL, WNOHANG) == x->child && (x->child = 0, 1);
}
static void r_child_go(struct pc *x)
{
	(void)!write(x->cp[1], "g", 1);
}
static void t_child(struct pc *x)
{
	if (x->child > 0) {
		(void)!write(x->cp[1], "g", 1);
		waitpid(x->child, NULL, 0); /* ECHILD if the target reaped it */
	}
}

/* POSIX record locks belong to a process: the conflicting lock is held
   by a child, which keeps it until its pipe is written. */
static int s_locker(struct pc *x, enum mode m)
{
	char c;

	s_tmpfile(x, m);
	if (m == PENDING)
		return 0;
	REQUIRE(pipe2(x->cp, O_CLOEXEC) == 0 && pipe2(x->jp, O_CLOEXEC) == 0,
		"pipe");
	x->child = fork();
	REQUIRE(x->child >= 0, "fork");
	if (x->child == 0) {
		struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
		if (fcntl(x->xfd, F_SETLK, &fl) != 0)
			_exit(1);
		(void)!write(x->jp[1], "l", 1);
		(void)!read(x->cp[0], &c, 1);
		_exit(0);
	}
	REQUIRE(read(x->jp[0], &c, 1) == 1, "the child did not lock");
	return 0;
}
static long c_setlkw(struct pc *x)
{
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	return fcntl(x->xfd, F_SETLKW, &fl);
}
static long c_lockf(struct pc *x)
{
	return lockf(x->xfd, F_LOCK, 0);
}

/* ----------------------------------------------------------- signals */

/* SIGUSR1 is blocked in every thread (main blocks it before any thread
   exists).  Pending: one is pending for the process; it must still be
   there after the cancellation. */
static int s_sigusr1(struct pc *x, enum mode m)
{
	(void)x;
	if (m == PENDING)
		kill(getpid(), SIGUSR1);
	return 0;
}
static sigset_t usr1_set(void)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	return s;
}
static long c_sigwait(struct pc *x)
{
	sigset_t s = usr1_set();
	int sig;

	(void)x;
	return sigwait(&s, &sig) == 0 ? sig : -1;
}
static long c_sigwaitinfo(struct pc *x)
{
	sigset_t s = usr1_set();
	(void)x;
	return sigwaitinfo(&s, NULL);
}
static long c_sigtimedwait(struct pc *x)
{
	sigset_t s = usr1_set();
	(void)x;
	return sigtimedwait(&s, NULL, &(struct timespec){10, 0});
}
static int usr1_kept(struct pc *x)
{
	sigset_t s = usr1_set();
	(void)x;
	return sigtimedwait(&s, NULL, &(struct timespec){0, 0}) == SIGUSR1;
}
static pthread_t current;
static void r_usr1(struct pc *x)
{
	(void)x;
	pthread_kill(current, SIGUSR1);
}

/* ------------------------------------------------------ message queues */

static int s_msq(struct pc *x, enum mode m, int full)
{
	struct msqid_ds ds;
	struct {
		long type;
		char text[8];
	} msg = {1, "1234567"};

	x->msq = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
	REQUIRE(x->msq >= 0, "msgget: %s", strerror(errno));
	REQUIRE(msgctl(x->msq, IPC_STAT, &ds) == 0, "IPC_STAT");
	ds.msg_qbytes = 8;
	REQUIRE(msgctl(x->msq, IPC_SET, &ds) == 0, "IPC_SET");
	/* receive: a message waits (pending); send: queue full (blocked) */
	if ((m == PENDING) != full)
		REQUIRE(msgsnd(x->msq, &msg, 8, IPC_NOWAIT) == 0, "msgsnd");
	return 0;
}
static int s_msq_rcv(struct pc *x, enum mode m)
{
	return s_msq(x, m, 0);
}
static int s_msq_snd(struct pc *x, enum mode m)
{
	return s_msq(x, m, 1);
}
static long c_msgrcv(struct pc *x)
{
	struct {
		long type;
		char text[8];
	} msg;
	return msgrcv(x->msq, &msg, 8, 0, 0);
}
static long c_msgsnd(struct pc *x)
{
	struct {
		long type;
		char text[8];
	} msg = {1, "abcdefg"};
	return msgsnd(x->msq, &msg, 8, 0);
}
static long msq_count(struct pc *x)
{
	struct msqid_ds ds;
	return msgctl(x->msq, IPC_STAT, &ds) == 0 ? (long)ds.msg_qnum : -1;
}
static int msq_one(struct pc *x)
{
	return msq_count(x) == 1;
}
static int msq_none(struct pc *x)
{
	return msq_count(x) == 0;
}
static void t_msq(struct pc *x)
{
	msgctl(x->msq, IPC_RMID, NULL);
}

static int s_mq(struct pc *x, enum mode m, int full)
{
	struct mq_attr a = {.mq_maxmsg = 1, .mq_msgsize = 8};
	char name[64];

	snprintf(name, sizeof name, "/weft-cp-%d", (int)getpid());
	x->mq = mq_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600, &a);
	REQUIRE(x->mq != (mqd_t)-1, "mq_open: %s", strerror(errno));
	mq_unlink(name);
	if ((m == PENDING) != full)
		REQUIRE(mq_send(x->mq, "1234567", 8, 0) == 0, "mq_send");
	return 0;
}
static int s_mq_rcv(struct pc *x, enum mode m)
{
	return s_mq(x, m, 0);
}
static int s_mq_snd(struct pc *x, enum mode m)
{
	return s_mq(x, m, 1);
}
static long c_mq_receive(struct pc *x)
{
	char b[8];
	return mq_receive(x->mq, b, 8, NULL);
}
static long c_mq_timedreceive(struct pc *x)
{
	char b[8];
	struct timespec ts = deadline_in(CLOCK_REALTIME, 10000000000L);
	return mq_timedreceive(x->mq, b, 8, NULL, &ts);
}
static long c_mq_send(struct pc *x)
{
	return mq_send(x->mq, "abcdefg", 8, 0);
}
static long c_mq_timedsend(struct pc *x)
{
	struct timespec ts = deadline_in(CLOCK_REALTIME, 10000000000L);
	return mq_timedsend(x->mq, "abcdefg", 8, 0, &ts);
}
static long mq_count(struct pc *x)
{
	struct mq_attr a;
	return mq_getattr(x->mq, &a) == 0 ? a.mq_curmsgs : -1;
}
static int mq_one(struct pc *x)
{
	return mq_count(x) == 1;
}
static int mq_none(struct pc *x)
{
	return mq_count(x) == 0;
}
static void t_mq(struct pc *x)
{
	mq_close(x->mq);
}

/* ---------------------------------------------------- weft's own waits */

static int s_sem(struct pc *x, enum mode m)
{
	sem_init(&x->sem, 0, m == PENDING);
	return 0;
}
static long c_sem_wait(struct pc *x)
{
	return sem_wait(&x->sem);
}
static long c_sem_timedwait(struct pc *x)
{
	struct timespec ts = deadline_in(CLOCK_REALTIME, 10000000000L);
	return sem_timedwait(&x->sem, &ts);
}
static long c_sem_clockwait(struct pc *x)
{
	struct timespec ts = deadline_in(CLOCK_MONOTONIC, 10000000000L);
	return sem_clockwait(&x->sem, CLOCK_MONOTONIC, &ts);
}
static int sem_kept(struct pc *x)
{
	int v = -1;
	sem_getvalue(&x->sem, &v);
	return v == 1;
}
static void r_sem(struct pc *x)
{
	sem_post(&x->sem);
}

static void *joinee_main(void *arg)
{
	struct pc *x = arg;
	char c;

	(void)!read(x->jp[0], &c, 1);
	return (void *)7;
}
static int s_join(struct pc *x, enum mode m)
{
	(void)m;
	REQUIRE(pipe(x->jp) == 0, "pipe");
	REQUIRE(pthread_create(&x->joinee, NULL, joinee_main, x) == 0, "joinee");
	return 0;
}
static long c_join(struct pc *x)
{
	return pthread_join(x->joinee, NULL);
}
static long c_timedjoin(struct pc *x)
{
	struct timespec ts = deadline_in(CLOCK_REALTIME, 10000000000L);
	return pthread_timedjoin_np(x->joinee, NULL, &ts);
}
static long c_clockjoin(struct pc *x)
{
	struct timespec ts = deadline_in(CLOCK_MONOTONIC, 10000000000L);
	return pthread_clockjoin_np(x->joinee, NULL, CLOCK_MONOTONIC, &ts);
}
static int joinee_joinable(struct pc *x)
{
	void *r = NULL;

	(void)!write(x->jp[1], "q", 1);
	if (pthread_join(x->joinee, &r) != 0 || r != (void *)7)
		return 0;
	x->joinee = 0;
	return 1;
}
static void r_joinee_end(struct pc *x)
{
	(void)!write(x->jp[1], "q", 1);
}
static void t_join(struct pc *x)
{
	if (x->joinee) {
		(void)!write(x->jp[1], "q", 1);
		/* Joinable unless the target joined it (uncancelled case). */
		pthread_join(x->joinee, NULL);
	}
}

static int s_cond(struct pc *x, enum mode m)
{
	pthread_mutexattr_t a;

	(void)m;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&x->m, &a);
	pthread_mutexattr_destroy(&a);
	pthread_cond_init(&x->c, NULL);
	x->cleanup_unlock = -1;
	return 0;
}
static void cond_unlock(void *arg)
{
	struct pc *x = arg;
	x->cleanup_unlock = pthread_mutex_unlock(&x->m);
}
static long cond_call(struct pc *x, int timed)
{
	struct timespec ts = deadline_in(timed == 2 ? CLOCK_MONOTONIC
						    : CLOCK_REALTIME,
					 10000000000L);
	volatile long r = 0; /* live across the handler's setjmp */

	pthread_mutex_lock(&x->m);
	pthread_cleanup_push(cond_unlock, x);
	while (!x->cond_go && r == 0)
		r = timed == 2	 ? pthread_cond_clockwait(&x->c, &x->m,
							  CLOCK_MONOTONIC, &ts)
		    : timed == 1 ? pthread_cond_timedwait(&x->c, &x->m, &ts)
				 : pthread_cond_wait(&x->c, &x->m);
	pthread_cleanup_pop(1);
	return r;
}
static long c_cond_wait(struct pc *x)
{
	return cond_call(x, 0);
}
static long c_cond_timedwait(struct pc *x)
{
	return cond_call(x, 1);
}
static long c_cond_clockwait(struct pc *x)
{
	return cond_call(x, 2);
}
static int held_in_handler(struct pc *x)
{
	return x->cleanup_unlock == 0;
}
static void r_cond(struct pc *x)
{
	pthread_mutex_lock(&x->m);
	x->cond_go = 1;
	pthread_cond_broadcast(&x->c);
	pthread_mutex_unlock(&x->m);
}
static void t_cond(struct pc *x)
{
	pthread_cond_destroy(&x->c);
	pthread_mutex_destroy(&x->m);
}

/* --------------------------------------------------------------- table */

#define NR(...) {__VA_ARGS__, -1}
static const struct point points[] = {
	{"read", s_pipe, c_read, data_kept, NULL, NULL, NR(SYS_read), 0},
	{"readv", s_pipe, c_readv, data_kept, NULL, NULL, NR(SYS_readv), 0},
	{"write", s_pipe_full, c_write, nothing_written, NULL, NULL, NR(SYS_write), 0},
	{"writev", s_pipe_full, c_writev, nothing_written, NULL, NULL, NR(SYS_writev), 0},
	{"poll", s_pipe, c_poll, data_kept, NULL, NULL, NR(SYS_poll, SYS_ppoll), 0},
	{"ppoll", s_pipe, c_ppoll, data_kept, NULL, NULL, NR(SYS_ppoll), 0},
	{"select", s_pipe, c_select, data_kept, NULL, NULL, NR(SYS_select, SYS_pselect6), 0},
	{"pselect", s_pipe, c_pselect, data_kept, NULL, NULL, NR(SYS_pselect6), 0},
	{"epoll_wait", s_epoll, c_epoll_wait, data_kept, NULL, NULL, NR(SYS_epoll_wait, SYS_epoll_pwait), 0},
	{"epoll_pwait", s_epoll, c_epoll_pwait, data_kept, NULL, NULL, NR(SYS_epoll_pwait), 0},
	{"nanosleep", s_clock, c_nanosleep, slept_little, NULL, NULL, NR(SYS_nanosleep, SYS_clock_nanosleep), 0},
	{"clock_nanosleep", s_clock, c_clock_nanosleep, slept_little, NULL, NULL, NR(SYS_clock_nanosleep), 0},
	{"sleep", s_clock, c_sleep, slept_little, NULL, NULL, NR(SYS_nanosleep, SYS_clock_nanosleep), 0},
	{"usleep", s_clock, c_usleep, slept_little, NULL, NULL, NR(SYS_nanosleep, SYS_clock_nanosleep), 0},
	{"pause", s_clock, c_pause, slept_little, NULL, NULL, NR(SYS_pause, SYS_ppoll), 0},
	{"sigsuspend", s_clock, c_sigsuspend, slept_little, NULL, NULL, NR(SYS_rt_sigsuspend), 0},
	{"accept", s_listen, c_accept, conn_kept, r_connect_in, NULL, NR(SYS_accept, SYS_accept4), 0},
	{"accept4", s_listen, c_accept4, conn_kept, r_connect_in, NULL, NR(SYS_accept4), 0},
	{"connect", s_connect, c_connect, no_conn, r_accept_one, NULL, NR(SYS_connect), 0},
	{"recv", s_pair, c_recv, sock_kept, r_sock_data, NULL, NR(SYS_recvfrom), 0},
	{"recvfrom", s_pair, c_recvfrom, sock_kept, r_sock_data, NULL, NR(SYS_recvfrom), 0},
	{"recvmsg", s_pair, c_recvmsg, sock_kept, r_sock_data, NULL, NR(SYS_recvmsg), 0},
	{"send", s_pair_full, c_send, sock_nothing_sent, NULL, NULL, NR(SYS_sendto), 0},
	{"sendto", s_pair_full, c_sendto, sock_nothing_sent, NULL, NULL, NR(SYS_sendto), 0},
	{"sendmsg", s_pair_full, c_sendmsg, sock_nothing_sent, NULL, NULL, NR(SYS_sendmsg), 0},
	{"recvmmsg", s_pair, c_recvmmsg, sock_kept, r_sock_data, NULL, NR(SYS_recvmmsg), 0},
	{"sendmmsg", s_pair_full, c_sendmmsg, sock_nothing_sent, NULL, NULL, NR(SYS_sendmmsg), 0},
	{"open(fifo)", s_fifo, c_open, no_new_fd, r_fifo_writer, t_fifo, NR(SYS_openat, SYS_open), 0},
	{"openat(fifo)", s_fifo, c_openat, no_new_fd, r_fifo_writer, t_fifo, NR(SYS_openat), 0},
	{"close", s_dupfd, c_close, still_open, NULL, NULL, NR(-1), NO_BLOCK},
	{"fsync", s_tmpfile, c_fsync, NULL, NULL, NULL, NR(-1), NO_BLOCK},
	{"fdatasync", s_tmpfile, c_fdatasync, NULL, NULL, NULL, NR(-1), NO_BLOCK},
	{"fcntl(F_OFD_SETLKW)", s_ofd, c_ofd_setlkw, not_locked, r_ofd_unlock, NULL, NR(SYS_fcntl), 0},
	{"fcntl(F_SETLKW)", s_locker, c_setlkw, NULL, r_child_go, t_child, NR(SYS_fcntl), 0},
	{"lockf(F_LOCK)", s_locker, c_lockf, NULL, r_child_go, t_child, NR(SYS_fcntl), 0},
	{"waitpid", s_child, c_waitpid, child_unreaped, r_child_go, t_child, NR(SYS_wait4), 0},
	{"wait", s_child, c_wait, child_unreaped, r_child_go, t_child, NR(SYS_wait4), 0},
	{"waitid", s_child, c_waitid, child_unreaped, r_child_go, t_child, NR(SYS_waitid), 0},
	{"wait3", s_child, c_wait3, child_unreaped, r_child_go, t_child, NR(SYS_wait4), 0},
	{"wait4", s_child, c_wait4, child_unreaped, r_child_go, t_child, NR(SYS_wait4), 0},
	{"sigwait", s_sigusr1, c_sigwait, usr1_kept, r_usr1, NULL, NR(SYS_rt_sigtimedwait), 0},
	{"sigwaitinfo", s_sigusr1, c_sigwaitinfo, usr1_kept, NULL, NULL, NR(SYS_rt_sigtimedwait), 0},
	{"sigtimedwait", s_sigusr1, c_sigtimedwait, usr1_kept, NULL, NULL, NR(SYS_rt_sigtimedwait), 0},
	{"msgrcv", s_msq_rcv, c_msgrcv, msq_one, NULL, t_msq, NR(SYS_msgrcv), 0},
	{"msgsnd", s_msq_snd, c_msgsnd, msq_none, NULL, t_msq, NR(SYS_msgsnd), 0},
	{"mq_receive", s_mq_rcv, c_mq_receive, mq_one, NULL, t_mq, NR(SYS_mq_timedreceive), 0},
	{"mq_timedreceive", s_mq_rcv, c_mq_timedreceive, mq_one, NULL, t_mq, NR(SYS_mq_timedreceive), 0},
	{"mq_send", s_mq_snd, c_mq_send, mq_none, NULL, t_mq, NR(SYS_mq_timedsend), 0},
	{"mq_timedsend", s_mq_snd, c_mq_timedsend, mq_none, NULL, t_mq, NR(SYS_mq_timedsend), 0},
	{"pthread_join", s_join, c_join, joinee_joinable, r_joinee_end, t_join, NR(SYS_futex), 0},
	{"pthread_timedjoin_np", s_join, c_timedjoin, joinee_joinable, r_joinee_end, t_join, NR(SYS_futex), 0},
	{"pthread_clockjoin_np", s_join, c_clockjoin, joinee_joinable, r_joinee_end, t_join, NR(SYS_futex), 0},
	{"pthread_cond_wait", s_cond, c_cond_wait, held_in_handler, r_cond, t_cond, NR(SYS_futex), 0},
	{"pthread_cond_timedwait", s_cond, c_cond_timedwait, held_in_handler, r_cond, t_cond, NR(SYS_futex), 0},
	{"pthread_cond_clockwait", s_cond, c_cond_clockwait, held_in_handler, r_cond, t_cond, NR(SYS_futex), 0},
	{"sem_wait", s_sem, c_sem_wait, sem_kept, r_sem, NULL, NR(SYS_futex), 0},
	{"sem_timedwait", s_sem, c_sem_timedwait, sem_kept, r_sem, NULL, NR(SYS_futex), 0},
	{"sem_clockwait", s_sem, c_sem_clockwait, sem_kept, r_sem, NULL, NR(SYS_futex), 0},
};
#define NPOINTS (sizeof points / sizeof *points)

/* --------------------------------------------------------------- driver */

struct run {
	const struct point *pt;
	struct pc *x;
	enum mode mode;
	int ready, go, cleaned;
	pid_t tid;
	long result;
	int err;
};

static void cleanup(void *arg)
{
	struct run *r = arg;
	__atomic_store_n(&r->cleaned, 1, __ATOMIC_RELEASE);
}

static void *target(void *arg)
{
	struct run *const r = arg;

	CHECK_WEFT_THREAD();
	r->tid = (pid_t)syscall(SYS_gettid);
	if (r->mode == PENDING)
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	else if (r->mode == ASYNC)
		pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
	pthread_cleanup_push(cleanup, r);
	__atomic_store_n(&r->ready, 1, __ATOMIC_RELEASE);
	if (r->mode == PENDING) {
		long end = mono_ns() + 5000000000L;

		while (!__atomic_load_n(&r->go, __ATOMIC_ACQUIRE) &&
		       mono_ns() < end)
			sched_yield();
		/* Enabling is not a cancellation point (deferred type). */
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	}
	r->result = r->pt->call(r->x);
	r->err = errno;
	pthread_cleanup_pop(0);
	return (void *)1;
}

/* The thread sleeps in one of the point's system calls.  Returns 1, or
   0 after 5 s with what was last seen in *seen. */
static int wait_blocked(pid_t tid, const int *nr, char *seen, size_t len)
{
	char path[64], buf[256];
	long end = mono_ns() + 5000000000L;

	do {
		FILE *f;
		size_t n;
		char *p;
		long sc;
		int state_s = 0;

		snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
		if ((f = fopen(path, "r"))) {
			n = fread(buf, 1, sizeof buf - 1, f);
			buf[n] = 0;
			fclose(f);
			p = strrchr(buf, ')');
			state_s = p && p[1] == ' ' && p[2] == 'S';
		}
		snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
		if ((f = fopen(path, "r"))) {
			n = fread(buf, 1, sizeof buf - 1, f);
			buf[n] = 0;
			fclose(f);
			sc = strtol(buf, &p, 10);
			snprintf(seen, len, "state %s, syscall %.20s",
				 state_s ? "S" : "not S", buf);
			if (state_s && p != buf)
				for (int i = 0; nr[i] != -1; i++)
					if (sc == nr[i])
						return 1;
		}
		sched_yield();
	} while (mono_ns() < end);
	return 0;
}

static int strict;
static int known_fail;

/* Is pthread_testcancel weft's (its own cancellation engine)?  Then
   every row counts. */
static int weft_engine(void)
{
	void *p = dlsym(RTLD_DEFAULT, "pthread_testcancel");
	Dl_info di;

	return p && dladdr(p, &di) && di.dli_fname &&
	       strstr(di.dli_fname, "libweft");
}

/* One case.  Returns 1 if the point behaved. */
static int run_case(const struct point *pt, enum mode mode)
{
	struct pc x;
	struct run r;
	pthread_t t;
	void *res = NULL;
	char seen[96] = "";
	int ok = 1, blocked = 1;
	struct timespec dl;

	memset(&x, 0, sizeof x);
	x.p[0] = x.p[1] = x.sv[0] = x.sv[1] = x.lfd = x.cfd = x.xfd = -1;
	x.cp[0] = x.cp[1] = x.jp[0] = x.jp[1] = x.epfd = -1;
	memset(&r, 0, sizeof r);
	r.pt = pt, r.x = &x, r.mode = mode;
	if (pt->setup(&x, mode) != 0)
		return 0;
	if (pthread_create(&t, NULL, target, &r) != 0) {
		FAIL("%s/%s: pthread_create", pt->name, mode_name[mode]);
		return 0;
	}
	current = t;
	while (!__atomic_load_n(&r.ready, __ATOMIC_ACQUIRE))
		sched_yield();
	if (mode != PENDING)
		blocked = wait_blocked(r.tid, pt->nr, seen, sizeof seen);
	CHECK_ERR(pthread_cancel(t), 0);
	__atomic_store_n(&r.go, 1, __ATOMIC_RELEASE);
	/* A cancellation acts within microseconds; the rows known not to be
	   points yet wait less, to keep the run short. */
	dl = deadline_in(CLOCK_REALTIME,
			 pt->flags & NOT_YET ? 300000000L : 3000000000L);
	if (pthread_timedjoin_np(t, &res, &dl) != 0) {
		/* Not cancelled: release it so that it ends. */
		if (pt->release)
			pt->release(&x);
		else
			kick(&x, t);
		pthread_join(t, &res);
	}
	if (!blocked) {
		fprintf(stderr, "  %s/%s: never seen blocked in the call (%s)\n",
			pt->name, mode_name[mode], seen);
		ok = 0;
	}
	if (res != PTHREAD_CANCELED) {
		fprintf(stderr, "  %s/%s: not cancelled (call returned %ld, %s)\n",
			pt->name, mode_name[mode], r.result, strerror(r.err));
		ok = 0;
	} else if (!r.cleaned) {
		fprintf(stderr, "  %s/%s: cleanup handler did not run\n", pt->name,
			mode_name[mode]);
		ok = 0;
	}
	if (mode == PENDING && pt->check_pending && res == PTHREAD_CANCELED &&
	    !pt->check_pending(&x)) {
		fprintf(stderr, "  %s/%s: the call had an effect before the cancellation\n",
			pt->name, mode_name[mode]);
		ok = 0;
	}
	if (mode != PENDING && pt->check_pending == held_in_handler &&
	    res == PTHREAD_CANCELED &&
	    !held_in_handler(&x)) {
		fprintf(stderr, "  %s/%s: mutex not held in the cleanup handler (unlock: %d)\n",
			pt->name, mode_name[mode], x.cleanup_unlock);
		ok = 0;
	}
	if (pt->teardown)
		pt->teardown(&x);
	close_all(&x);
	return ok;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	sigset_t s;
	int cases = 0, failed = 0;
	long start = mono_ns();

	WEFT_REQUIRE();
	REQUIRE_SERVED(pthread_create);
	REQUIRE_SERVED(pthread_cancel);
	REQUIRE_SERVED(pthread_join);
	REQUIRE_SERVED(pthread_cond_wait);
	REQUIRE_SERVED(sem_wait);
	strict = weft_engine() || (getenv("WEFT_CANCEL_STRICT") &&
				   atoi(getenv("WEFT_CANCEL_STRICT")));
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_release;
	sigaction(SIG_RELEASE, &sa, NULL);
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &s, NULL);

	for (size_t i = 0; i < NPOINTS; i++) {
		const struct point *pt = &points[i];
		int pt_ok = 1;

		if (argc > 1 && strcmp(argv[1], pt->name) != 0)
			continue;
		for (int m = PENDING; m <= ASYNC; m++) {
			if (m != PENDING && (pt->flags & NO_BLOCK))
				continue;
			if (m == ASYNC && (pt->flags & NO_ASYNC))
				continue;
			cases++;
			if (!run_case(pt, (enum mode)m))
				pt_ok = 0;
		}
		if (pt->flags & NOT_YET) {
			printf("%-24s %s\n", pt->name,
			       pt_ok ? "XPASS (listed as not a point yet)"
				     : "KNOWN-FAIL (not a cancellation point in weft yet)");
			if (!pt_ok)
				known_fail++;
			if (!pt_ok && strict) {
				FAIL("cancellation point %s failed (strict)", pt->name);
				failed++;
			}
		} else {
			printf("%-24s %s\n", pt->name, pt_ok ? "ok" : "FAILED");
			if (!pt_ok) {
				FAIL("cancellation point %s failed (details above)",
				     pt->name);
				failed++;
			}
		}
		fflush(stdout);
	}
	printf("%d cases, %d points failed, %d known failures, %.1f s\n", cases,
	       failed, known_fail, (mono_ns() - start) / 1e9);
	TEST_DONE();
}
