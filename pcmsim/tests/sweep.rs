//! A sweep over a tiny CSV trace: one JSON line per point plus a summary, with the values the
//! LRU hand test predicts.

use pcmsim::config::Models;
use pcmsim::policy::PolicyParams;
use pcmsim::sim::MemSpec;
use pcmsim::sweep::{run, Source, SweepSpec};

#[test]
fn sweep_over_csv_trace() {
    // Same trace as policy::lru::tests::hand_trace (pages 1..5), on 3 frames with one DRAM
    // frame: DRAM share 1/3 -> round(1.0) = 1 DRAM frame.
    let csv = "index,op,state,time\n1,W,foreground,0\n2,R,foreground,10\n3,W,foreground,20\n\
               1,R,foreground,30\n4,R,foreground,40\n3,W,foreground,50\n5,R,foreground,60\n";
    let path = std::env::temp_dir().join(format!("pcmsim-sweep-{}.csv", std::process::id()));
    std::fs::write(&path, csv).unwrap();
    let spec = SweepSpec {
        policies: vec!["lru".into(), "fgbg".into()],
        mems: vec![MemSpec::Pages(3), MemSpec::Frac(1.0)],
        dram_shares: vec![1.0 / 3.0],
        params: PolicyParams::default(),
        models: Models::default(),
        wear_bins: 4,
    };
    let mut out = Vec::new();
    run(&spec, &Source::File(path.clone()), &mut out).unwrap();
    std::fs::remove_file(&path).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5);
    let lru3 = lines[0];
    assert!(lru3.starts_with(r#"{"type":"point","trace":""#), "{lru3}");
    for field in [
        r#""policy":"lru""#,
        r#""mem_frac":0.6"#, // 3 frames / footprint 5
        r#""frames":3,"#,
        r#""dram_frames":1,"pcm_frames":2"#,
        r#""requests":7,"fg_requests":7,"hits":2,"#,
        r#""evictions":2,"writebacks":1"#,
        r#""time":6263,"#,
        r#""wear_max":3"#,
        r#""time_model":"paper""#,
    ] {
        assert!(lru3.contains(field), "missing {field} in {lru3}");
    }
    // 100% of the footprint = 5 frames: only the 5 cold misses.
    assert!(lines[2].contains(r#""frames":5,"#) && lines[2].contains(r#""hits":2,"#), "{}", lines[2]);
    let summary = lines[4];
    assert!(summary.contains(r#""type":"summary""#) && summary.contains(r#""footprint":5"#));
    assert!(summary.contains(r#""points":4"#));
}

#[test]
fn malformed_trace_error_names_the_record() {
    let path = std::env::temp_dir().join(format!("pcmsim-bad-{}.csv", std::process::id()));
    std::fs::write(&path, "index,op,state\n1,R,foreground\n2,R,asleep\n").unwrap();
    let spec = SweepSpec {
        policies: vec!["lru".into()],
        mems: vec![MemSpec::Pages(4)],
        dram_shares: vec![0.05],
        params: PolicyParams::default(),
        models: Models::default(),
        wear_bins: 4,
    };
    let err = run(&spec, &Source::File(path.clone()), &mut Vec::new()).unwrap_err();
    std::fs::remove_file(&path).unwrap();
    assert!(err.starts_with("line 3 (record 2): bad state 'asleep'"), "{err}");
}
