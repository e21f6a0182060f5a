//! One machine's description as JSON: the preset's parameters plus the placement the model
//! derives from them (active tiles, vCPU -> core -> tile, each quadrant's memory controllers).
//! The gem5 tier builds its Ruby/Garnet system from this, so both tiers read one preset.

use crate::json::JsonWriter;
use crate::memory::DeviceKind;
use crate::params::{positions_text, Params};
use crate::topology::Topology;

pub fn machine_json(p: &Params, vcpus: usize) -> Result<String, String> {
    p.validate(vcpus)?;
    let topo = Topology::new(p, vcpus);
    let mut w = JsonWriter::new();
    w.begin_object();
    w.field_key("machine");
    p.write_json(&mut w);
    w.field_u64("vcpus", vcpus as u64);
    w.field_str("tiles", &positions_text(&topo.tile_pos));
    w.field_array("vcpu_core");
    for &core in &topo.vcpu_core {
        w.element_u64(core as u64);
    }
    w.end_array();
    w.field_array("core_tile");
    for core in 0..topo.n_cores {
        w.element_u64(topo.core_tile(core) as u64);
    }
    w.end_array();
    for (name, kind) in [("ddr", DeviceKind::Dram), ("mcdram", DeviceKind::Mcdram)] {
        let per_quadrant: Vec<_> = (0..4).map(|q| topo.mc_of_quadrant(kind, q)).collect();
        w.field_str(&format!("{name}_mc_of_quadrant"), &positions_text(&per_quadrant));
    }
    w.end_object();
    Ok(w.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::preset;

    #[test]
    fn knl_64_describes_32_tiles_and_scatter_numbering() {
        let text = machine_json(&preset("knl-64").unwrap(), 4).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["machine"]["mesh.rows"], 6);
        assert_eq!(v["tiles"].as_str().unwrap().split('/').count(), 32);
        assert!(!v["tiles"].as_str().unwrap().split('/').any(|t| t == "1:1"));
        // Scatter: vCPU i on core i, cores 2t and 2t+1 on tile t.
        assert_eq!(v["vcpu_core"], serde_json::json!([0, 1, 2, 3]));
        assert_eq!(v["core_tile"].as_array().unwrap().len(), 64);
        assert_eq!(v["core_tile"][3], 1);
        assert_eq!(v["ddr_mc_of_quadrant"].as_str().unwrap().split('/').count(), 4);
    }

    #[test]
    fn the_description_carries_each_chips_hierarchy() {
        let v = |name: &str| -> serde_json::Value {
            serde_json::from_str(&machine_json(&preset(name).unwrap(), 4).unwrap()).unwrap()
        };
        let altra = v("altra-80");
        let tiles: Vec<&str> = altra["tiles"].as_str().unwrap().split('/').collect();
        let mut sites = tiles.clone();
        sites.dedup();
        assert_eq!(
            (tiles.len(), sites.len(), &altra["machine"]["mesh.tiles_per_site"]),
            (80, 20, &serde_json::json!(4))
        );
        assert_eq!(altra["machine"]["llc.size_kib"], 410);
        assert_eq!(v("icelake-32")["machine"]["llc.size_kib"], 1536);
        let epyc = v("epyc2-64");
        assert_eq!(
            (epyc["machine"]["protocol"].as_str(), epyc["machine"]["dir.home"].as_str()),
            (Some("moesif"), Some("mc"))
        );
        assert_eq!(v("knl-64")["machine"]["llc.policy"], "none");
    }

    #[test]
    fn too_many_vcpus_is_an_error() {
        assert!(machine_json(&preset("tiny-4").unwrap(), 5).is_err());
    }
}
