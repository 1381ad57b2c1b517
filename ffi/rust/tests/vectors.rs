// SPDX-License-Identifier: Apache-2.0
//! The conformance vectors (tests/vectors/README.md) through the crate's
//! readers of bytes: `Record::decode` with `attrs_in` (and `attrs`, with
//! the vectors' key map registered in this process), and, with the feature
//! `inspect`, `inspect::decode_process`.  The JSON is read by the small
//! reader below (the crate has no dependencies).
use otel_thread_ctx::{register_key, Error, Record};
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    fn get(&self, key: &str) -> &Json {
        match self {
            Json::Obj(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v).unwrap_or(&Json::Null),
            _ => &Json::Null,
        }
    }
    fn str(&self) -> &str {
        match self {
            Json::Str(s) => s,
            other => panic!("not a string: {:?}", other),
        }
    }
    fn arr(&self) -> &[Json] {
        match self {
            Json::Arr(a) => a,
            other => panic!("not an array: {:?}", other),
        }
    }
    fn num(&self) -> f64 {
        match self {
            Json::Num(n) => *n,
            other => panic!("not a number: {:?}", other),
        }
    }
    fn truth(&self) -> bool {
        matches!(self, Json::Bool(true))
    }
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl<'a> Parser<'a> {
    fn ws(&mut self) {
        while self.at < self.s.len() && (self.s[self.at] as char).is_ascii_whitespace() {
            self.at += 1;
        }
    }
    fn eat(&mut self, c: u8) {
        self.ws();
        assert_eq!(self.s[self.at], c, "JSON: '{}' expected at {}", c as char, self.at);
        self.at += 1;
    }
    fn hex4(&mut self) -> u32 {
        let h = std::str::from_utf8(&self.s[self.at..self.at + 4]).unwrap();
        self.at += 4;
        u32::from_str_radix(h, 16).unwrap()
    }
    fn string(&mut self) -> String {
        self.eat(b'"');
        let mut out = String::new();
        loop {
            let c = self.s[self.at];
            self.at += 1;
            match c {
                b'"' => return out,
                b'\\' => {
                    let e = self.s[self.at];
                    self.at += 1;
                    match e {
                        b'n' => out.push('\n'),
                        b't' => out.push('\t'),
                        b'r' => out.push('\r'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'u' => {
                            let mut u = self.hex4();
                            if (0xd800..0xdc00).contains(&u) {
                                self.at += 2; // "\u"
                                let low = self.hex4();
                                u = 0x10000 + ((u - 0xd800) << 10) + (low - 0xdc00);
                            }
                            out.push(char::from_u32(u).unwrap());
                        }
                        other => out.push(other as char),
                    }
                }
                _ => {
                    // Multi-byte UTF-8 passes through whole.
                    let start = self.at - 1;
                    let mut end = self.at;
                    while end < self.s.len() && (self.s[end] & 0xc0) == 0x80 {
                        end += 1;
                    }
                    out.push_str(std::str::from_utf8(&self.s[start..end]).unwrap());
                    self.at = end;
                }
            }
        }
    }
    fn value(&mut self) -> Json {
        self.ws();
        match self.s[self.at] {
            b'{' => {
                self.at += 1;
                let mut m = Vec::new();
                self.ws();
                if self.s[self.at] == b'}' {
                    self.at += 1;
                    return Json::Obj(m);
                }
                loop {
                    let k = self.string();
                    self.eat(b':');
                    m.push((k, self.value()));
                    self.ws();
                    self.at += 1;
                    if self.s[self.at - 1] == b'}' {
                        return Json::Obj(m);
                    }
                }
            }
            b'[' => {
                self.at += 1;
                let mut a = Vec::new();
                self.ws();
                if self.s[self.at] == b']' {
                    self.at += 1;
                    return Json::Arr(a);
                }
                loop {
                    a.push(self.value());
                    self.ws();
                    self.at += 1;
                    if self.s[self.at - 1] == b']' {
                        return Json::Arr(a);
                    }
                }
            }
            b'"' => Json::Str(self.string()),
            b't' => {
                self.at += 4;
                Json::Bool(true)
            }
            b'f' => {
                self.at += 5;
                Json::Bool(false)
            }
            b'n' => {
                self.at += 4;
                Json::Null
            }
            _ => {
                let start = self.at;
                while self.at < self.s.len() && b"+-0123456789.eE".contains(&self.s[self.at]) {
                    self.at += 1;
                }
                Json::Num(std::str::from_utf8(&self.s[start..self.at]).unwrap().parse().unwrap())
            }
        }
    }
}

fn load(name: &str) -> Json {
    let path: PathBuf =
        [env!("CARGO_MANIFEST_DIR"), "..", "..", "tests", "vectors", name].iter().collect();
    let text = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {}", path.display(), e));
    Parser { s: &text, at: 0 }.value()
}

fn unhex(h: &str) -> Vec<u8> {
    (0..h.len() / 2).map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).unwrap()).collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{:02x}", x)).collect()
}

/// Every record vector whose placement is 2-aligned (alignment is a rule of
/// readers of memory), decoded and walked as the vector says.
#[test]
fn records() {
    let doc = load("records.json");
    let key_map = doc.get("key_map").arr();
    // The key map, as this process's registry: attrs() walks with it.
    for (i, k) in key_map.iter().enumerate() {
        assert_eq!(register_key(k.str()).unwrap(), i as u32);
    }
    let max = doc.get("record_max").num() as usize;
    let mut checked = 0;
    for v in doc.get("vectors").arr() {
        let name = v.get("name").str();
        let e = v.get("expect");
        if v.get("address_mod_8").num() as u64 % 2 != 0 {
            continue;
        }
        let bytes = unhex(v.get("bytes").str());
        let got = Record::decode(&bytes[..bytes.len().min(max)]);
        if !e.get("read").truth() {
            assert_eq!(e.get("reason").str(), "valid", "{}", name);
            assert_eq!(got.err(), Some(Error::EINVALID), "{}", name);
            checked += 1;
            continue;
        }
        let rec = got.unwrap_or_else(|err| panic!("{}: {:?}", name, err));
        assert_eq!(hex(&rec.trace_id()), e.get("trace_id").str(), "{}", name);
        assert_eq!(hex(&rec.span_id()), e.get("span_id").str(), "{}", name);
        assert_eq!(rec.trace_flags() as f64, e.get("trace_flags").num(), "{}", name);
        let mut want: Vec<(u32, String)> = e
            .get("attributes")
            .arr()
            .iter()
            .map(|a| (a.get("index").num() as u32, a.get("value").str().to_string()))
            .collect();
        want.sort();
        for walk in 0..2 {
            let mut have: Vec<(u32, String)> = if walk == 0 {
                rec.attrs_in(key_map.len() as u32).map(|(k, v)| (k, hex(v))).collect()
            } else {
                rec.attrs().map(|(k, v)| (k, hex(v))).collect()
            };
            have.sort();
            assert_eq!(have, want, "{}: attributes (walk {})", name, walk);
        }
        checked += 1;
    }
    assert!(checked >= 20, "only {} record vectors checked", checked);
}

/// Every process-context vector a decoder of the payload alone judges:
/// the accepted ones decoded as the vector says, `decode` refused with
/// EDECODE, a payload over 65,536 bytes with E2BIG.
#[cfg(feature = "inspect")]
#[test]
fn process_contexts() {
    use otel_thread_ctx::inspect::{decode_process, AnyValue};

    let doc = load("process.json");
    let max = doc.get("payload_max").num() as usize;
    let mut checked = 0;
    for v in doc.get("vectors").arr() {
        let name = v.get("name").str();
        let e = v.get("expect");
        let mut payload = unhex(v.get("payload").str());
        if let Json::Num(n) = v.get("payload_zeros") {
            payload.resize(payload.len() + *n as usize, 0);
        }
        let got = decode_process(&payload);
        if !e.get("read").truth() {
            match e.get("reason").str() {
                "decode" => assert_eq!(got.err(), Some(Error::EDECODE), "{}", name),
                "payload-size" if payload.len() > max => {
                    assert_eq!(got.err(), Some(Error::E2BIG), "{}", name)
                }
                _ => continue, // a header's rule
            }
            checked += 1;
            continue;
        }
        let ctx = got.unwrap_or_else(|err| panic!("{}: {:?}", name, err));
        let opt = |j: &Json| match j {
            Json::Null => None,
            s => Some(s.str().to_string()),
        };
        assert_eq!(ctx.schema_version, opt(e.get("schema_version")), "{}", name);
        let keys = match e.get("key_map") {
            Json::Null => None,
            a => Some(a.arr().iter().map(|k| k.str().to_string()).collect::<Vec<_>>()),
        };
        assert_eq!(ctx.key_map, keys, "{}", name);
        for (part, have) in [("resource", &ctx.resource), ("attributes", &ctx.attributes)] {
            let want = e.get(part).arr();
            assert_eq!(have.len(), want.len(), "{}: {}", name, part);
            for ((k, value), w) in have.iter().zip(want) {
                assert_eq!(k, w.get("key").str(), "{}: {}", name, part);
                let x = w.get("value");
                let same = match (w.get("type").str(), value) {
                    ("string", AnyValue::Str(s)) => s == x.str(),
                    ("int", AnyValue::Int(i)) => *i as f64 == x.num(),
                    ("bool", AnyValue::Bool(b)) => *b == x.truth(),
                    ("double", AnyValue::Double(d)) => *d == x.num(),
                    ("bytes", AnyValue::Bytes(b)) => hex(b) == x.str(),
                    _ => false,
                };
                assert!(same, "{}: {} {}: {:?}, expected {:?}", name, part, k, value, w);
            }
        }
        checked += 1;
    }
    assert!(checked >= 15, "only {} process-context vectors checked", checked);
}
