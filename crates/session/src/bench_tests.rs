//! Where a bench run's jobs come from, and its stonewall groups.

use super::*;

#[test]
fn sources_are_told_apart_and_mixtures_refused() {
    let t = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let none: Vec<String> = Vec::new();
    assert_eq!(
        source(&t(&["/dev/nvme0n1"]), None, &none).unwrap(),
        JobSource::Targets
    );
    let jf = t(&["jobs/a.fio"]);
    assert_eq!(
        source(&jf, None, &none).unwrap(),
        JobSource::FioFile(Path::new("jobs/a.fio"))
    );
    let plan = Path::new("p.json");
    assert_eq!(
        source(&none, Some(plan), &none).unwrap(),
        JobSource::Plan(plan)
    );
    let args = t(&["--name=a", "--filename=/tmp/x"]);
    assert_eq!(
        source(&none, None, &args).unwrap(),
        JobSource::FioArgs(&args)
    );
    assert!(source(&jf, Some(plan), &none).is_err());
    assert!(source(&t(&["a.fio", "/dev/nvme0n1"]), None, &none).is_err());
    assert!(source(&t(&["/dev/nvme0n1"]), Some(plan), &none).is_err());
    assert!(source(&t(&["/dev/nvme0n1"]), None, &args).is_err());
}

#[test]
fn stonewall_and_wait_for_start_groups() {
    let mut p = Placement::default();
    for (i, (stone, wait)) in [
        (false, None),
        (false, None),
        (true, None),
        (false, Some("c")),
    ]
    .into_iter()
    .enumerate()
    {
        let mut t = planner::TargetPlacement {
            path: format!("t{i}"),
            ..Default::default()
        };
        t.options.stonewall = stone;
        t.options.wait_for = wait.map(String::from);
        p.targets.push(t);
    }
    let g = groups(&p);
    let paths: Vec<Vec<&str>> = g
        .iter()
        .map(|g| g.targets.iter().map(|t| t.path.as_str()).collect())
        .collect();
    assert_eq!(paths, vec![vec!["t0", "t1"], vec!["t2"], vec!["t3"]]);
}
