//! Inputs for the stable randomized fuzz tests of parsers: valid seeds,
//! their random mutations (deletions, spliced pieces, replaced characters,
//! inserted numbers) and strings of pieces alone. Deterministic for a seed.
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

/// One to three random edits of `s`, with `pieces` as the spliced-in text.
pub fn mutate(rng: &mut Pcg64, s: &str, pieces: &[&str]) -> String {
    let mut v: Vec<char> = s.chars().collect();
    for _ in 0..rng.random_range(1..4) {
        let at = rng.random_range(0..=v.len());
        match rng.random_range(0..4) {
            0 if !v.is_empty() => {
                let end = rng.random_range(at..=v.len());
                v.drain(at..end);
            }
            1 if !pieces.is_empty() => {
                let p = pieces[rng.random_range(0..pieces.len())];
                for (k, c) in p.chars().enumerate() {
                    v.insert(at + k, c);
                }
            }
            2 if at < v.len() => v[at] = rng.random_range(b' '..=b'~') as char,
            _ => {
                let n = rng.random_range(0..1_000_000u64).to_string();
                for (k, c) in n.chars().enumerate() {
                    v.insert(at + k, c);
                }
            }
        }
    }
    v.into_iter().collect()
}

/// The seeds, `n` mutations of them and `n / 8` strings of up to `max_pieces`
/// pieces, from the random stream of `seed`.
pub fn inputs(
    seed: u64,
    seeds: &[&str],
    pieces: &[&str],
    n: usize,
    max_pieces: usize,
) -> Vec<String> {
    let mut rng = Pcg64::seed_from_u64(seed);
    let mut out: Vec<String> = seeds.iter().map(|s| s.to_string()).collect();
    if seeds.is_empty() || pieces.is_empty() {
        return out;
    }
    for _ in 0..n {
        let s = seeds[rng.random_range(0..seeds.len())];
        out.push(mutate(&mut rng, s, pieces));
    }
    for _ in 0..n / 8 {
        let len = rng.random_range(0..max_pieces.max(1));
        out.push(
            (0..len)
                .map(|_| pieces[rng.random_range(0..pieces.len())])
                .collect(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_inputs_and_seeds_come_first() {
        let a = inputs(7, &["ab", "cd"], &[":", "="], 50, 8);
        assert_eq!(a, inputs(7, &["ab", "cd"], &[":", "="], 50, 8));
        assert_eq!(&a[..2], &["ab".to_string(), "cd".to_string()]);
        assert_eq!(a.len(), 2 + 50 + 6);
        assert_ne!(a, inputs(8, &["ab", "cd"], &[":", "="], 50, 8));
        // Mutations differ from their seeds most of the time.
        assert!(a[2..52].iter().filter(|s| *s != "ab" && *s != "cd").count() > 40);
    }
}
