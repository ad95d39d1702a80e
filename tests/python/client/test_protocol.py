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

    def test_a_long_line_can_be_marked_in_its_place(self):
        s = protocol.LineSplitter(max_bytes=8)
        self.assertEqual(s.feed(b"a\n" + b"x" * 20, mark_too_long=True), [b"a", None])
        self.assertEqual(s.feed(b"x\nb\n", mark_too_long=True), [b"b"])
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

    def test_decode_refuses_deep_nesting_and_what_json_does_not_have(self):
        for line in (b"[" * 60000, b"[" * 2000 + b"]" * 2000, b'{"v":1,"type":"x","n":NaN}',
                     b'{"v":1,"type":"x","n":-Infinity}', b'{"v":1,"type":"x","s":"a\x00"}'):
            with self.assertRaises(protocol.ProtocolError) as raised:
                protocol.decode(line)
            self.assertEqual(raised.exception.code, "bad_json", line[:40])
        at_limit = b'{"v":1,"type":"x","a":' + b"[" * 31 + b"]" * 31 + b"}"  # the object and 31 lists: 32
        self.assertEqual(protocol.decode(at_limit)["type"], "x")
        with self.assertRaises(protocol.ProtocolError):
            protocol.decode(b'{"v":1,"type":"x","a":' + b"[" * 32 + b"]" * 32 + b"}")

    def test_check_advice_holds_an_advice_to_the_table(self):
        good = {"v": 1, "type": "advice", "id": "j1-1", "level": 1, "action": "shrink_batch", "factor": 0.75}
        fields = protocol.check_advice(good)
        self.assertEqual((fields["id"], fields["level"], fields["factor"], fields["reason"], fields["message"],
                          fields["deadline_unix"]), ("j1-1", 1, 0.75, {}, "", None))
        self.assertEqual(protocol.check_advice({**good, "id": 17})["id"], "17")
        bad = [{"factor": float("inf")}, {"factor": float("nan")}, {"factor": 2}, {"factor": None},
               {"factor": "0.5"}, {"factor": True}, {"factor": 10 ** 400}, {"factor": 1}, {"factor": 0},
               {"level": 4}, {"level": "1"}, {"level": 1.0}, {"action": "dance"}, {"id": "i" * 65},
               {"id": ""}, {"id": None}, {"message": "m" * 1025}, {"message": 3}, {"reason": []},
               {"deadline_unix": "soon"}, {"deadline_unix": 10 ** 400}, {"extra": [0] * 300},
               {"extra": "x" * 9000}, {"extra": {"now": float("inf")}}]
        for change in bad:
            with self.assertRaises(protocol.ProtocolError, msg=repr(change)[:80]) as raised:
                protocol.check_advice({**good, **change})
            self.assertEqual(raised.exception.code, "bad_advice")
        with self.assertRaises(protocol.ProtocolError):
            protocol.check_advice(good, actions=("checkpoint_now", "stop"))  # not declared
        self.assertIsNone(protocol.check_advice({**good, "action": "stop", "factor": "x"})["factor"])

    def test_split_gpus(self):
        self.assertEqual(protocol.split_gpus("0,2"), ([0, 2], []))
        self.assertEqual(protocol.split_gpus([1, "GPU-x", "MIG-y", True, "junk"]), ([1], ["GPU-x", "MIG-y"]))
        self.assertEqual(protocol.split_gpus(None), ([], []))


if __name__ == "__main__":
    unittest.main()
