"""The binding's cleanup of contexts, whatever the threads that published
them did: a thread that ends while it publishes a Context, inside a `with`
scope it never left, or with a saved context it kept, leaves nothing
behind: once the program drops its references, a weak reference to each
Context (the scope's saved contexts and spares included) dies, and the C
contexts are destroyed."""

import gc
import threading
import unittest
import weakref

import otel_thread_ctx as otc
from otel_thread_ctx import Error, ThreadCtxError

TRACE = bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736")
SPAN = bytes.fromhex("00f067aa0ba902b7")
CHILD = bytes.fromhex("1111111111111111")


def run_thread(target):
    """Runs target on a thread of its own, to its end; re-raises what it
    raised."""
    errors = []

    def body():
        try:
            target()
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    t = threading.Thread(target=body)
    t.start()
    t.join(60)
    if t.is_alive():
        raise AssertionError("the thread did not end")
    if errors:
        raise errors[0]


class Tracked:
    """The C contexts created and not yet destroyed while it is entered
    (Context.__init__ and Context.destroy wrapped)."""

    def __enter__(self):
        self.live = set()
        self.created = 0
        self.init, self.destroy = otc.Context.__init__, otc.Context.destroy
        tracker = self

        def init(ctx, *args, **kwargs):
            tracker.init(ctx, *args, **kwargs)
            tracker.live.add(ctx.address)
            tracker.created += 1

        def destroy(ctx):
            tracker.live.discard(ctx.address)
            tracker.destroy(ctx)

        otc.Context.__init__ = init
        otc.Context.destroy = otc.Context.close = destroy
        return self

    def __exit__(self, *exc):
        otc.Context.__init__ = self.init
        otc.Context.destroy = otc.Context.close = self.destroy


class Cleanup(unittest.TestCase):
    def setUp(self):
        otc.detach()

    def assertGone(self, refs, what):
        for _ in range(3):
            gc.collect()
        alive = [r() for r in refs if r() is not None]
        self.assertEqual(alive, [], "%s: %d context(s) still alive" % (what, len(alive)))

    def assertThreadPublishesNothing(self):
        with self.assertRaises(ThreadCtxError) as cm:
            otc.read()
        self.assertEqual(cm.exception.code, Error.ENOCTX)

    def assertNoneLive(self, tracked, what):
        gc.collect()
        self.assertEqual(tracked.live, set(), "%s: C contexts not destroyed" % what)

    def test_thread_ends_while_attached(self):
        with Tracked() as t:
            ctx = otc.Context(TRACE, SPAN, 1)
            refs = [weakref.ref(ctx)]
            run_thread(lambda: ctx.attach())
            del ctx
            self.assertGone(refs, "attached by a thread that ended")
            self.assertNoneLive(t, "attached by a thread that ended")
        self.assertThreadPublishesNothing()

    def test_thread_ends_with_a_saved_context(self):
        with Tracked() as t:
            ctx = otc.Context(TRACE, SPAN, 1)
            refs = [weakref.ref(ctx)]

            def task():
                otc.Context(TRACE, CHILD).attach()
                saved = ctx.attach(otc.Context())
                refs.append(weakref.ref(saved))

            run_thread(task)
            del ctx
            self.assertGone(refs, "a thread's saved context")
            self.assertNoneLive(t, "a thread's saved context")
            self.assertEqual(t.created, 3)

    def test_thread_ends_inside_a_scope(self):
        with Tracked() as t:
            self.thread_ends_inside_a_scope()
            self.assertNoneLive(t, "scopes of a thread that ended inside them")
            # ctx, three left scopes' contexts and one spare, outer and one
            # more saved context.
            self.assertEqual(t.created, 7)

    def thread_ends_inside_a_scope(self):
        ctx = otc.Context(TRACE, SPAN, 1, capacity=0)
        refs = [weakref.ref(ctx)]
        seen = []

        def task():
            # Scopes left (their saved contexts become spares), then one
            # entered and never left, nested in another.
            for _ in range(3):
                with otc.Context(TRACE, CHILD):
                    pass
            outer = otc.Context(TRACE, CHILD)
            outer.__enter__()
            ctx.__enter__()
            seen.append(otc.read().span_id)
            for c, saved in otc._scopes():
                refs.append(weakref.ref(c))
                refs.append(weakref.ref(saved))
            for spare in otc._spares():
                refs.append(weakref.ref(spare))

        run_thread(task)
        self.assertEqual(seen, [SPAN])
        self.assertEqual(len(refs), 5)
        del ctx
        self.assertGone(refs, "scopes of a thread that ended inside them")

    def test_context_dropped_while_threads_publish_it(self):
        with Tracked() as t:
            self.context_dropped_while_threads_publish_it()
            self.assertNoneLive(t, "a context whose scope closed on another thread")
            self.assertEqual(t.created, 2)

    def context_dropped_while_threads_publish_it(self):
        ctx = otc.Context(TRACE, SPAN, 1)
        refs = [weakref.ref(ctx)]
        published = threading.Event()
        go_on = threading.Event()
        reads = []

        def task():
            with ctx:
                published.set()
                go_on.wait(60)
                reads.append(otc.read().span_id)

        t = threading.Thread(target=task)
        t.start()
        self.assertTrue(published.wait(60))
        # The scope holds the Context while it is open; the copy the thread
        # publishes does not depend on it.
        del ctx
        gc.collect()
        go_on.set()
        t.join(60)
        self.assertEqual(reads, [SPAN])
        self.assertGone(refs, "a context whose scope closed on another thread")

    def test_many_threads_end_publishing_one_context(self):
        with Tracked() as tracked:
            ctx = otc.Context(TRACE, SPAN, 1)
            refs = [weakref.ref(ctx)]
            threads = [threading.Thread(target=ctx.__enter__) for _ in range(16)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            del ctx, threads
            self.assertGone(refs, "entered by 16 threads that ended")
            self.assertNoneLive(tracked, "entered by 16 threads that ended")
            # The context and each thread's saved context.
            self.assertEqual(tracked.created, 17)


if __name__ == "__main__":
    unittest.main()
