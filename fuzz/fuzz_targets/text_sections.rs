//! The text index section decoders (`format::text`) on arbitrary bytes: never panic.
//!
//! The input is split into a stats section, a postings section and doc lengths. They are
//! decoded and walked on their own, and also paired with a valid term dictionary built from
//! the input's words, so `TextIndexView::parse`/`verify`/`postings` run over damaged
//! postings, stats and lengths. (The `fst` term dictionary itself is only read after its
//! crc was checked — see `format::text` — so it is always one the writer produced.)
#![no_main]

use hopgraph::format::text::{
    PostingList, PostingsReader, FieldLens, TextIndexView, TextIndexWriter, TextStats,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = TextStats::decode(data);
    if data.len() > 2 {
        let offset = u64::from(data[0]) % data.len() as u64;
        if let Ok(mut r) = PostingsReader::new(&data[1..], offset) {
            while let Ok(Some(_)) = r.next_posting() {}
        }
        // Layouts 2 and 3 (by the first byte): walk, and seek to targets from the input,
        // over damaged metas too.
        let layout = 2 + u32::from(data[0] & 1);
        if let Ok(list) = PostingList::new(&data[1..], offset, layout) {
            let mut c = list.cursor();
            while let Ok(true) = c.advance() {}
            let mut c = list.cursor();
            for &t in data.iter().take(16) {
                let _ = c.block_for(u32::from(t) * 64);
                if c.seek(u32::from(t) * 64).is_err() {
                    break;
                }
            }
        }
    }
    // A valid index from the input's bytes as words of up to 8 documents.
    let mut w = TextIndexWriter::new();
    let docs: Vec<u32> = (0..(data.first().copied().unwrap_or(0) % 8) as u32).collect();
    for &d in &docs {
        let terms: Vec<(Vec<u8>, [u32; 3])> = data
            .chunks(3)
            .enumerate()
            .filter(|(i, _)| *i as u32 % 8 == d)
            .map(|(_, c)| (c.to_vec(), [1, 0, 0]))
            .collect::<std::collections::BTreeMap<_, _>>()
            .into_iter()
            .collect();
        let pairs: Vec<u32> = data.chunks(4).map(|c| c.iter().fold(d, |a, &b| a << 8 | u32::from(b))).collect();
        w.add_doc(d, [1, 2, 3], &pairs, terms);
    }
    let Ok(s) = w.finish(&docs) else { return };
    let records = docs.len() as u64;
    let v = TextIndexView::parse(&s.stats, &s.terms, &s.postings, FieldLens::Narrow(&s.doc_lens), records)
        .expect("the writer's sections parse");
    v.verify(&docs).expect("the writer's sections verify");
    // The same dictionary over damaged postings / stats / lengths.
    let half = data.len() / 2;
    let (stats, postings) = (&data[..half], &data[half..]);
    let wide: Vec<u32> = data.iter().map(|&b| u32::from(b)).collect();
    let narrow: Vec<u16> = data.iter().map(|&b| u16::from(b)).collect();
    for (st, po, le) in [
        (&s.stats[..], postings, FieldLens::Narrow(&s.doc_lens)),
        (stats, &s.postings[..], FieldLens::Narrow(&s.doc_lens)),
        (&s.stats[..], &s.postings[..], FieldLens::Wide(&wide)),
        (&s.stats[..], &s.postings[..], FieldLens::Narrow(&narrow)),
    ] {
        if let Ok(v) = TextIndexView::parse(st, &s.terms, po, le, records) {
            let _ = v.verify(&docs);
            for c in data.chunks(3) {
                if let Ok(Some(mut r)) = v.postings(c) {
                    while let Ok(Some(_)) = r.next_posting() {}
                }
                if let Ok(Some(list)) = v.list(c) {
                    let mut cur = list.cursor();
                    while let Ok(true) = cur.advance() {}
                }
            }
            let at = usize::from(data.first().copied().unwrap_or(0));
            let _ = v.doc_len(at);
            // Phrase-pair filters of the input's bytes, of any length.
            let pairs: Vec<u64> = data.chunks(8).map(|c| c.iter().fold(0, |a, &b| a << 8 | u64::from(b))).collect();
            if let Ok(v) = v.with_pairs(&pairs) {
                let _ = v.pair_filter(at);
                // A phrase-pair set of the same words (any length, any stated size).
                if let Ok(v) = v.with_pair_set(&pairs) {
                    let hashes: Vec<u32> = data.chunks(4).map(|c| c.iter().fold(0, |a, &b| a << 8 | u32::from(b))).collect();
                    let _ = v.pair_set_holds(&hashes);
                }
            }
        }
    }
});
