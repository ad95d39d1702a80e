import unittest

from gpudoc import protocol


class LineSplitterTest(unittest.TestCase):
    def test_partial_lines_wait_for_the_rest(self):
        s = protocol.LineSplitter(max_bytes=16)
        self.assertEqual(s.feed(b'{"a"'), [])
        self.assertEqual(s.feed(b':1}\n{"b":2}\n{'), [b'{"a":1}', b'{"b":2}'])
        self.assertEqual(s.pending_bytes, 1)

    def test_a_long_line_is_skipped_whole_in_bounded_memory(self):
        s = protocol.LineSplitter(max_bytes=16)
        out = []
        for _ in range(100):
            out += s.feed(b"x" * 10)
            self.assertLessEqual(s.pending_bytes, 16)
        out += s.feed(b"tail\nok\n")
        self.assertEqual(out, [b"ok"])
        self.assertEqual(s.too_long, 1)

    def test_the_limit_counts_the_newline(self):
        s = protocol.LineSplitter(max_bytes=4)
        self.assertEqual(s.feed(b"abc\nabcd\nab\n"), [b"abc", b"ab"])
        self.assertEqual(s.too_long, 1)


class CodecTest(unittest.TestCase):
    def test_encode_adds_the_version_and_maps_nan_to_null(self):
        self.assertEqual(protocol.encode({"type": "report", "figures": {"x": float("inf")}}),
                         b'{"type":"report","figures":{"x":null},"v":1}\n')

    def test_encode_refuses_a_line_over_the_limit(self):
        with self.assertRaises(protocol.ProtocolError) as raised:
            protocol.encode({"type": "report", "pad": "x" * protocol.MAX_LINE_BYTES})
        self.assertEqual(raised.exception.code, protocol.ERR_LINE_TOO_LONG)

    def test_decode_names_what_is_wrong(self):
        cases = {b"nope": "bad_json", b"[]": "not_an_object", b'{"type":"x"}': "missing_field",
                 b'{"v":true,"type":"x"}': "missing_field", b'{"v":1}': "missing_field",
                 b'{"v":9,"type":"advice"}': "unsupported_version", b"\xff": "bad_json"}
        for line, code in cases.items():
            with self.assertRaises(protocol.ProtocolError) as raised:
                protocol.decode(line)
            self.assertEqual(raised.exception.code, code, line)
        self.assertEqual(protocol.decode(b'{"v":1,"type":"advice","new":1}')["new"], 1)

    def test_split_gpus(self):
        self.assertEqual(protocol.split_gpus("0,2"), ([0, 2], []))
        self.assertEqual(protocol.split_gpus([1, "GPU-x", "MIG-y", True, "junk"]), ([1], ["GPU-x", "MIG-y"]))
        self.assertEqual(protocol.split_gpus(None), ([], []))


if __name__ == "__main__":
    unittest.main()
