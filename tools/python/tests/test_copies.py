"""hybridcache.copy_in / copy_out (no node needed): the bytes move where the offsets and
addresses say, and every bad range is refused with InvalidArgument before anything is
copied — never a crash, never a write outside the buffer."""

import unittest

import numpy as np

import hybridcache as hc


def addr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


class CopiesTest(unittest.TestCase):
    def test_copy_in_gathers_and_copy_out_scatters(self):
        srcs = [np.arange(n, dtype=np.uint8) + n for n in (7, 64, 1)]
        buf = bytearray(100)
        offsets = [3, 20, 99]
        hc.copy_in(buf, offsets, [addr(s) for s in srcs], [s.nbytes for s in srcs])
        want = bytearray(100)
        for off, s in zip(offsets, srcs):
            want[off:off + s.nbytes] = s.tobytes()
        self.assertEqual(buf, want)

        dsts = [np.zeros_like(s) for s in srcs]
        hc.copy_out(bytes(buf), offsets, [addr(d) for d in dsts], [d.nbytes for d in dsts])
        for s, d in zip(srcs, dsts):
            np.testing.assert_array_equal(s, d)

    def test_the_arena_of_a_numpy_view_is_a_buffer_too(self):
        arena = np.zeros(32, dtype=np.uint8)
        src = np.full(8, 0xAB, dtype=np.uint8)
        hc.copy_in(arena, [24], [addr(src)], [8])
        self.assertEqual(arena[24:].tolist(), [0xAB] * 8)
        self.assertEqual(arena[:24].tolist(), [0] * 24)

    def test_nothing_to_copy_is_not_an_error(self):
        hc.copy_in(bytearray(4), [], [], [])
        hc.copy_out(bytearray(4), [4], [0], [0])  # an empty range at the end, no address

    def test_a_range_outside_the_buffer_is_refused_and_nothing_is_copied(self):
        src = np.arange(16, dtype=np.uint8)
        for offset, length in ((0, 17), (10, 7), (17, 0), (2**63, 2), (1, 2**64 - 1)):
            buf = bytearray(16)
            with self.assertRaises(hc.InvalidArgument) as e:
                # the first range is good: it must not be copied either
                hc.copy_in(buf, [0, offset], [addr(src), addr(src)], [4, length])
            self.assertIn("outside the 16-byte buffer", str(e.exception))
            self.assertEqual(buf, bytearray(16))

    def test_a_null_address_and_lists_of_different_lengths_are_refused(self):
        with self.assertRaises(hc.InvalidArgument) as e:
            hc.copy_out(bytearray(8), [0], [0], [8])
        self.assertIn("address 0 is null", str(e.exception))
        with self.assertRaises(hc.InvalidArgument) as e:
            hc.copy_in(bytearray(8), [0, 1], [1], [1])
        self.assertIn("differ in length", str(e.exception))

    def test_a_strided_view_is_refused(self):
        src = np.arange(32, dtype=np.uint8)
        base = np.zeros(64, dtype=np.uint8)
        for view in (base[::2], base[::-1][:32]):  # every other byte; reversed, whose
            with self.assertRaises(hc.InvalidArgument) as e:  # first byte is the last
                hc.copy_in(view, [0], [addr(src)], [32])
            self.assertIn("not contiguous", str(e.exception))
            with self.assertRaises(hc.InvalidArgument):
                hc.copy_out(view, [0], [addr(src)], [32])
        self.assertEqual(base.tolist(), [0] * 64)
        two_d = np.zeros((4, 8), dtype=np.uint8, order="F")  # contiguous, column order
        hc.copy_in(two_d, [0], [addr(src)], [32])
        self.assertEqual(two_d.tobytes(order="A"), src.tobytes())

    def test_copy_in_needs_a_writable_buffer(self):
        src = np.zeros(4, dtype=np.uint8)
        with self.assertRaises(BufferError):
            hc.copy_in(b"\x01\x02\x03\x04", [0], [addr(src)], [4])


if __name__ == "__main__":
    unittest.main()
