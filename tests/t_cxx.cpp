// C++ threads on weft: std::thread (made through pthread_create), a
// thread_local object with a destructor (must run at thread exit),
// exceptions inside threads, std::mutex/std::condition_variable hand-off,
// std::async.
#include "harness.h"

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

static std::atomic<int> ctor_count{0}, dtor_count{0};
static std::atomic<int> dtor_value_sum{0};
// Destructors announce themselves, for a detached thread nobody joins.
static std::mutex dtor_mu;
static std::condition_variable dtor_cv;

struct Tracked {
	int value = 0;
	std::string text;
	Tracked() : text("thread-local string long enough to live on the heap")
	{
		ctor_count++;
	}
	~Tracked()
	{
		// Runs at thread exit, still in the exiting thread.
		if (text != "thread-local string long enough to live on the heap")
			FAIL("thread_local destructor sees a corrupted member");
		dtor_value_sum += value;
		std::lock_guard<std::mutex> lk(dtor_mu);
		dtor_count++;
		dtor_cv.notify_all();
	}
};

thread_local Tracked tracked;
thread_local int tl_plain = 5;


static void thread_body(int i, std::vector<int> *origins)
{
	CHECK_WEFT_THREAD();
	(*origins)[i] = weft_self_origin();
	CHECK_EQ(tl_plain, 5);
	tl_plain = i;
	tracked.value = i + 1; // first use constructs it
	CHECK_EQ(tl_plain, i);
}

static int throw_deep(int n)
{
	if (n == 0)
		throw std::runtime_error("deep");
	return throw_deep(n - 1) + 1;
}

int main()
{
	WEFT_REQUIRE();
	CHECK_EQ(weft_self_origin(), WEFT_THREAD_MAIN);

	// std::thread + thread_local destructors.
	const int N = 16;
	std::vector<int> origins(N, -1);
	std::vector<std::thread> ts;
	for (int i = 0; i < N; i++)
		ts.emplace_back(thread_body, i, &origins);
	for (auto &t : ts)
		t.join();
	for (int i = 0; i < N; i++)
		CHECK_EQ(origins[i], WEFT_THREAD_CREATED);
	CHECK_EQ(ctor_count.load(), N);
	CHECK_EQ(dtor_count.load(), N); // every thread's destructor ran
	CHECK_EQ(dtor_value_sum.load(), N * (N + 1) / 2);

	// A detached std::thread's thread_local destructor runs too.
	{
		int before = dtor_count.load();
		std::thread([] {
			CHECK_WEFT_THREAD();
			tracked.value = 1000;
		}).detach();
		std::unique_lock<std::mutex> lk(dtor_mu);
		if (!dtor_cv.wait_for(lk, std::chrono::seconds(30),
				      [&] { return dtor_count.load() > before; }))
			FAIL("detached thread's thread_local destructor never ran");
		CHECK_EQ(dtor_count.load(), before + 1);
		CHECK_EQ(ctor_count.load(), before + 1);
	}

	// Exceptions thrown and caught inside threads.
	std::atomic<int> caught{0};
	ts.clear();
	for (int i = 0; i < 4; i++)
		ts.emplace_back([&caught, i] {
			CHECK_WEFT_THREAD();
			for (int k = 0; k < 100; k++) {
				try {
					if (k % 2)
						throw std::runtime_error("odd " + std::to_string(i));
					throw_deep(20);
				} catch (const std::runtime_error &e) {
					std::string w = (k % 2) ? "odd " + std::to_string(i) : "deep";
					if (w != e.what())
						FAIL("caught \"%s\", expected \"%s\"", e.what(), w.c_str());
					else
						caught++;
				}
			}
		});
	for (auto &t : ts)
		t.join();
	CHECK_EQ(caught.load(), 400);

	// std::mutex / std::condition_variable hand-off: a token passed back
	// and forth 10,000 times.
	{
		std::mutex m;
		std::condition_variable cv;
		int turn = 0; // 0: main's turn, 1: worker's turn
		long token = 0;
		const int ROUNDS = 10000;
		std::thread w([&] {
			CHECK_WEFT_THREAD();
			for (int r = 0; r < ROUNDS; r++) {
				std::unique_lock<std::mutex> lk(m);
				cv.wait(lk, [&] { return turn == 1; });
				token = token * 3 + 1;
				turn = 0;
				cv.notify_one();
			}
		});
		long expect = 0;
		for (int r = 0; r < ROUNDS; r++) {
			std::unique_lock<std::mutex> lk(m);
			cv.wait(lk, [&] { return turn == 0; });
			if (token != expect) {
				FAIL("round %d: token %ld, expected %ld", r, token, expect);
				break;
			}
			token = (token + 1) % 1000003;
			expect = ((token) * 3 + 1);
			turn = 1;
			cv.notify_one();
		}
		{
			std::unique_lock<std::mutex> lk(m);
			cv.wait(lk, [&] { return turn == 0; });
			CHECK_EQ(token, expect);
		}
		w.join();
	}

	// std::async: values and exceptions come back through futures.
	{
		std::vector<std::future<long>> fs;
		for (int i = 0; i < 8; i++)
			fs.push_back(std::async(std::launch::async, [i] {
				CHECK_WEFT_THREAD();
				long s = 0;
				for (int k = 0; k <= 1000 * i; k++)
					s += k;
				return s;
			}));
		for (int i = 0; i < 8; i++) {
			long n = 1000L * i;
			CHECK_EQ(fs[i].get(), n * (n + 1) / 2);
		}
		auto bad = std::async(std::launch::async, []() -> int {
			CHECK_WEFT_THREAD();
			throw std::logic_error("from async");
		});
		try {
			bad.get();
			FAIL("std::async: expected an exception from get()");
		} catch (const std::logic_error &e) {
			CHECK(std::string(e.what()) == "from async", "got \"%s\"", e.what());
		}
		auto id = std::async(std::launch::async, [] {
			return std::this_thread::get_id();
		}).get();
		CHECK(id != std::this_thread::get_id(),
		      "std::async(launch::async) ran on the calling thread");
	}
	TEST_DONE();
}
