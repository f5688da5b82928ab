//! Structured mutations of text inputs: numbers become interesting values,
//! words become other words of the corpus or huge strings, lines are
//! duplicated, dropped, swapped or spliced from other inputs, unknown keys
//! appear; now and then a byte is flipped. Inputs are text in every target
//! (JSON lines, job files, TOML, request lines), so one mutator serves all.

use zonelab_sim::SimRng;

/// Values at the edges of the integer and float types the parsers read.
pub const INTERESTING: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "255",
    "256",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "16777216",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "1e308",
    "-1e308",
    "1e-308",
    "0.5",
    "NaN",
    "inf",
    "1t",
    "16777215t",
    "99999999999",
    "3650d",
    "0x10",
];

/// Largest input a mutation may produce (the trace line cap is 1 MiB).
pub const INPUT_BYTES_MAX: usize = 2 << 20;

/// Words (identifiers) of `corpus`, the vocabulary word mutations draw from.
pub fn dictionary(corpus: &[String]) -> Vec<String> {
    let mut words: Vec<String> = corpus
        .iter()
        .flat_map(|text| text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.')))
        .filter(|w| w.len() > 1 && w.chars().next().is_some_and(|c| c.is_ascii_alphabetic()))
        .map(str::to_string)
        .collect();
    words.sort();
    words.dedup();
    words
}

/// One to four stacked mutations of a corpus entry chosen by `rng`.
pub fn mutate(rng: &mut SimRng, corpus: &[String], dict: &[String]) -> String {
    let mut text = corpus[rng.below(corpus.len() as u64) as usize].clone();
    for _ in 0..=rng.below(4) {
        text = mutate_once(rng, &text, corpus, dict);
        if text.len() > INPUT_BYTES_MAX {
            let mut end = INPUT_BYTES_MAX;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
        }
    }
    text
}

fn pick<'a, T>(rng: &mut SimRng, items: &'a [T]) -> &'a T {
    &items[rng.below(items.len() as u64) as usize]
}

fn mutate_once(rng: &mut SimRng, text: &str, corpus: &[String], dict: &[String]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if lines.is_empty() {
        lines.push(String::new());
    }
    let at = rng.below(lines.len() as u64) as usize;
    match rng.below(10) {
        0..=2 => lines[at] = replace_token(rng, &lines[at], true, dict),
        3 | 4 => lines[at] = replace_token(rng, &lines[at], false, dict),
        5 => lines[at] = insert_unknown_key(rng, &lines[at]),
        6 => {
            let copies = if rng.chance(0.2) { 1 + rng.below(2000) } else { 1 };
            let line = lines[at].clone();
            lines.splice(at..at, std::iter::repeat_n(line, copies as usize));
        }
        7 => match rng.below(3) {
            0 => drop(lines.remove(at)),
            1 => {
                let other = rng.below(lines.len() as u64) as usize;
                lines.swap(at, other);
            }
            _ => lines.truncate(at),
        },
        8 => {
            let other: Vec<&str> = pick(rng, corpus).lines().collect();
            if !other.is_empty() {
                lines.insert(at, pick(rng, &other).to_string());
            }
        }
        _ => return flip_byte(rng, text),
    }
    let mut out = lines.join("\n");
    if rng.chance(0.9) {
        out.push('\n');
    }
    out
}

/// Spans of `line` that are numbers (`numbers`) or words, as byte ranges.
fn tokens(line: &str, numbers: bool) -> Vec<(usize, usize)> {
    let bytes = line.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let is_num = |b: u8| b.is_ascii_digit();
        let is_word = |b: u8| b.is_ascii_alphabetic() || b == b'_';
        let start = i;
        if numbers && (is_num(bytes[i]) || (bytes[i] == b'-' && bytes.get(i + 1).is_some_and(|&b| is_num(b)))) {
            i += 1;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'.') {
                i += 1;
            }
            spans.push((start, i));
        } else if !numbers && is_word(bytes[i]) {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            spans.push((start, i));
        } else {
            i += 1;
        }
    }
    spans
}

/// Replaces a number with an interesting value, or a word with another
/// word, an empty one or a huge one.
fn replace_token(rng: &mut SimRng, line: &str, numbers: bool, dict: &[String]) -> String {
    let spans = tokens(line, numbers);
    if spans.is_empty() {
        return line.to_string();
    }
    let &(start, end) = pick(rng, &spans);
    let new = if numbers {
        match rng.below(8) {
            0 => rng.next_u64().to_string(),
            1 => (rng.below(1 << 20) as i64 - 1).to_string(),
            _ => pick(rng, INTERESTING).to_string(),
        }
    } else {
        match rng.below(10) {
            0 => "A".repeat(1 + rng.below(200_000) as usize),
            1 => String::new(),
            2 => "\u{1F600}é\u{0}".to_string(),
            _ if !dict.is_empty() => pick(rng, dict).clone(),
            _ => "x".to_string(),
        }
    };
    format!("{}{new}{}", &line[..start], &line[end..])
}

/// An unknown key in the line's own syntax (JSON object, `key=value`, TOML).
fn insert_unknown_key(rng: &mut SimRng, line: &str) -> String {
    let key = format!("zz_unknown{}", rng.below(4));
    match line.find('{') {
        Some(i) => format!("{}{{\"{key}\":1,{}", &line[..i], &line[i + 1..]),
        None if rng.chance(0.5) => format!("{line}\n{key}=1"),
        None => format!("{key} = 1\n{line}"),
    }
}

/// Flips, inserts or removes one byte (then makes the text valid UTF-8
/// again, lossily: every target reads text).
fn flip_byte(rng: &mut SimRng, text: &str) -> String {
    let mut bytes = text.as_bytes().to_vec();
    let at = rng.below(bytes.len() as u64 + 1) as usize;
    match rng.below(3) {
        0 if at < bytes.len() => bytes[at] ^= 1 << rng.below(8),
        1 => bytes.insert(at, rng.below(256) as u8),
        _ if at < bytes.len() => drop(bytes.remove(at)),
        _ => bytes.push(b'\n'),
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_are_deterministic_and_change_inputs() {
        let corpus =
            vec!["{\"op\":\"write\",\"slba\":0,\"nlb\":8}\n".to_string(), "[j]\nrw=write\nbs=4k\n".to_string()];
        let dict = dictionary(&corpus);
        assert!(dict.contains(&"slba".to_string()) && dict.contains(&"rw".to_string()), "{dict:?}");
        let run = |seed| (0..200).map(|i| mutate(&mut SimRng::fork(seed, i), &corpus, &dict)).collect::<Vec<_>>();
        assert_eq!(run(7), run(7));
        let changed = run(7).iter().filter(|m| !corpus.contains(m)).count();
        assert!(changed > 150, "{changed} of 200 differ from the corpus");
    }

    #[test]
    fn tokens_find_numbers_and_words() {
        assert_eq!(tokens("slba=-12,nlb=4k", true), vec![(5, 8), (13, 15)]);
        assert_eq!(tokens("slba=-12,nlb=4k", false), vec![(0, 4), (9, 12), (14, 15)]);
    }
}
