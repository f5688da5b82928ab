//! Floats that survive a trip through JSON: JSON has no NaN or infinity
//! (serde_json writes them as null), so the result store writes them as the
//! strings "NaN", "inf" and "-inf". Used with `#[serde(with = ...)]`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Clone, Copy)]
struct F(f64);

impl Serialize for F {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            x if x.is_finite() => s.serialize_f64(x),
            x if x.is_nan() => s.serialize_str("NaN"),
            x if x > 0.0 => s.serialize_str("inf"),
            _ => s.serialize_str("-inf"),
        }
    }
}

impl<'de> Deserialize<'de> for F {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Repr {
            Number(f64),
            Text(String),
        }
        match Repr::deserialize(d)? {
            Repr::Number(x) => Ok(F(x)),
            Repr::Text(t) => match t.as_str() {
                "NaN" => Ok(F(f64::NAN)),
                "inf" => Ok(F(f64::INFINITY)),
                "-inf" => Ok(F(f64::NEG_INFINITY)),
                _ => Err(serde::de::Error::custom(format!("'{t}' is not a number (nor NaN, inf, -inf)"))),
            },
        }
    }
}

pub mod plain {
    use super::*;
    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        F(*v).serialize(s)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(F::deserialize(d)?.0)
    }
}

pub mod opt {
    use super::*;
    pub fn serialize<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        v.map(F).serialize(s)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        Ok(Option::<F>::deserialize(d)?.map(|f| f.0))
    }
}

pub mod vec {
    use super::*;
    pub fn serialize<S: Serializer>(v: &[f64], s: S) -> Result<S::Ok, S::Error> {
        v.iter().map(|&x| F(x)).collect::<Vec<_>>().serialize(s)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<f64>, D::Error> {
        Ok(Vec::<F>::deserialize(d)?.into_iter().map(|f| f.0).collect())
    }
}

pub mod pairs {
    use super::*;
    pub fn serialize<S: Serializer>(v: &[(f64, f64)], s: S) -> Result<S::Ok, S::Error> {
        v.iter().map(|&(a, b)| (F(a), F(b))).collect::<Vec<_>>().serialize(s)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(f64, f64)>, D::Error> {
        Ok(Vec::<(F, F)>::deserialize(d)?.into_iter().map(|(a, b)| (a.0, b.0)).collect())
    }
}

pub mod opt_pair {
    use super::*;
    pub fn serialize<S: Serializer>(v: &Option<(f64, f64)>, s: S) -> Result<S::Ok, S::Error> {
        v.map(|(a, b)| (F(a), F(b))).serialize(s)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<(f64, f64)>, D::Error> {
        Ok(Option::<(F, F)>::deserialize(d)?.map(|(a, b)| (a.0, b.0)))
    }
}

pub mod ticks {
    use super::*;
    pub fn serialize<S: Serializer>(v: &Option<Vec<(f64, String)>>, s: S) -> Result<S::Ok, S::Error> {
        v.as_ref().map(|t| t.iter().map(|(x, l)| (F(*x), l.as_str())).collect::<Vec<_>>()).serialize(s)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<(f64, String)>>, D::Error> {
        Ok(Option::<Vec<(F, String)>>::deserialize(d)?.map(|t| t.into_iter().map(|(x, l)| (x.0, l)).collect()))
    }
}

#[cfg(test)]
mod tests {
    #[derive(serde::Serialize, serde::Deserialize, Debug)]
    struct T {
        #[serde(with = "super::vec")]
        v: Vec<f64>,
    }

    #[test]
    fn non_finite_values_and_exact_ones_round_trip() {
        let t = T { v: vec![f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.1 + 0.2, 1e-300, 3.0] };
        let json = serde_json::to_string(&t).unwrap();
        let back: T = serde_json::from_str(&json).unwrap();
        assert!(back.v[0].is_nan());
        assert_eq!(
            back.v[1..].iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            t.v[1..].iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
        assert!(serde_json::from_str::<T>(r#"{"v":["x"]}"#).unwrap_err().to_string().contains("'x' is not a number"));
    }
}
