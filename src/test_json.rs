//! Generated JSON for differential tests (see [`Gen`]).

/// A small deterministic generator (xorshift64) of JSON text, well formed
/// or not, for tests that compare two readers of the same lines: no new
/// dependency, the same lines every run.
pub struct Gen(pub u64);

impl Gen {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn pick<'a>(&mut self, from: &[&'a [u8]]) -> &'a [u8] {
        from[self.below(from.len())]
    }
    /// A string literal, now and then one a tree cannot hold.
    pub fn string(&mut self) -> Vec<u8> {
        self.pick(&[
            br#""a""#,
            br#""""#,
            br#""text""#,
            br#""\u00e9 \ud83d\ude00 \u2028""#,
            br#""q\"b\\\n\u0000""#,
            br#""\ud800""#,
            br#""\udc00x""#,
            b"\"\xff\"",
            b"\"\xc3\xa9\"",
        ])
        .to_vec()
    }
    /// Any JSON value (or what a hostile server passes for one).
    pub fn value(&mut self, depth: usize) -> Vec<u8> {
        let leaf: &[&[u8]] = &[
            b"null",
            b"true",
            b"false",
            b"0",
            b"-0",
            b"1.50",
            b"1e300",
            b"1e400",
            b"-1e400",
            b"123456789012345678901234567890",
            b"-9223372036854775809",
        ];
        match self.below(if depth > 3 { 3 } else { 6 }) {
            0 => self.pick(leaf).to_vec(),
            1 => self.string(),
            2 if self.below(40) == 0 => [&b"["[..]; 200]
                .concat()
                .into_iter()
                .chain([b']'; 200])
                .collect(),
            2 => self.pick(leaf).to_vec(),
            3 => {
                let n = self.below(4);
                let items: Vec<Vec<u8>> = (0..n).map(|_| self.value(depth + 1)).collect();
                [b"[".to_vec(), items.join(&b","[..]), b"]".to_vec()].concat()
            }
            _ => {
                let keys: &[&[u8]] = &[br#""a""#, br#""b""#, br#""\u0061""#, br#""k""#];
                let n = self.below(4);
                let fields: Vec<Vec<u8>> = (0..n)
                    .map(|_| {
                        let key = self.pick(keys);
                        [key, b":", &self.value(depth + 1)].concat()
                    })
                    .collect();
                [b"{".to_vec(), fields.join(&b","[..]), b"}".to_vec()].concat()
            }
        }
    }
}
