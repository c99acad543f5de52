using DroneDelivery.Lab.Chaos;
using Xunit;

namespace DroneDelivery.Lab.Tests;

public sealed class ChaosVerdictTests
{
    private static readonly DateTimeOffset LoadStart = new(2026, 11, 26, 12, 0, 0, TimeSpan.Zero);

    private static readonly FaultRecord[] Faults =
    [
        new(FaultKind.KillWorkflow, TimeSpan.FromSeconds(40), TimeSpan.FromSeconds(45), "killed workflow-1", 1),
        .. FaultSchedule.SlottedFaults.Select((kind, i) => new FaultRecord(kind, TimeSpan.FromSeconds(50 + (i * 10)), TimeSpan.FromSeconds(55 + (i * 10)), "x", kind == FaultKind.NodeLoss ? 5 : 0)),
    ];

    [Fact]
    public void Whole_deliveries_and_compensated_dead_letters_account_for_every_accepted_request()
    {
        var stores = Stores(["d1", "d2", "d3"]) with { DeadLetters = [new DeadLetter("d4", "BackendRejected", "package 409")] };

        var figures = ChaosVerdicts.Figures(stores, new IngestionCounts(4, 0), Faults, LoadStart, LoadStart.AddSeconds(200));

        Assert.Equal(3, figures.Completed);
        Assert.Equal(1, figures.DeadLettered["BackendRejected"]);
        Assert.Equal((0L, 0L, 0, 0, 0), (figures.Lost, figures.Unaccounted, figures.DuplicatedTotal, figures.HalfDone.Count, figures.TransientDeadLetters));
        Assert.All(ChaosVerdicts.Verdicts(figures, Faults).Take(4), v => Assert.True(v.Passed, v.Check));
    }

    [Fact]
    public void An_accepted_request_with_no_outcome_is_lost_and_an_unreadable_dead_letter_does_not_account_for_it()
    {
        var stores = Stores(["d1", "d2"]) with { DeadLetters = [new DeadLetter(null, "InvalidMessage", "unreadable")] };

        var figures = ChaosVerdicts.Figures(stores, new IngestionCounts(3, 0), Faults, LoadStart, LoadStart.AddSeconds(200));

        Assert.Equal(2, figures.Lost);
        Assert.False(ChaosVerdicts.Verdicts(figures, Faults)[0].Passed);
    }

    [Fact]
    public void More_outcomes_than_202s_are_unaccounted_unless_requests_went_unanswered()
    {
        var stores = Stores(["d1", "d2", "d3"]);

        Assert.Equal(1, ChaosVerdicts.Figures(stores, new IngestionCounts(2, 0), Faults, LoadStart, LoadStart.AddSeconds(200)).Unaccounted);
        Assert.Equal(0, ChaosVerdicts.Figures(stores, new IngestionCounts(2, 1), Faults, LoadStart, LoadStart.AddSeconds(200)).Unaccounted);
    }

    [Fact]
    public void A_package_without_its_delivery_and_a_dead_letter_whose_work_remains_are_half_done()
    {
        var stores = Stores(["d1"]) with
        {
            Packages = [new("p-d1", "d1"), new("p-d2", "d2"), new("p-d3", "d3")],
            Assignments = ["d1", "d3"],
            DeadLetters = [new DeadLetter("d3", "TransientFailuresExhausted", "delivery 503")],
        };

        var figures = ChaosVerdicts.Figures(stores, new IngestionCounts(3, 0), Faults, LoadStart, LoadStart.AddSeconds(200));

        Assert.Equal(["d2: package without its drone assignment, utilization, delivery", "d3: dead-lettered, yet its package, drone assignment remain"], figures.HalfDone);
        Assert.Equal(1, figures.Completed);
        Assert.Equal(1, figures.TransientDeadLetters);
        Assert.Equal(1, figures.Lost); // d2: neither completed nor dead-lettered.
        var verdicts = ChaosVerdicts.Verdicts(figures, Faults);
        Assert.False(verdicts.Single(v => v.Check.StartsWith("nothing half-done", StringComparison.Ordinal)).Passed);
        Assert.False(verdicts.Single(v => v.Check.Contains("transient", StringComparison.Ordinal)).Passed);
    }

    [Fact]
    public void Two_packages_for_one_delivery_and_one_request_as_two_deliveries_are_duplicates()
    {
        var stores = Stores(["d1", "d2"]) with
        {
            Packages = [new("p-d1", "d1"), new("p-d1b", "d1"), new("p-d2", "d2")],
            Deliveries = [new("d1", "p-d1", LoadStart), new("d2", "p-d1", LoadStart)],
            Utilization = ["d1", "d2", "d2"],
        };

        var figures = ChaosVerdicts.Figures(stores, new IngestionCounts(2, 0), Faults, LoadStart, LoadStart.AddSeconds(200));

        Assert.Equal(1, figures.Duplicated["delivery with two packages"]);
        Assert.Equal(1, figures.Duplicated["one request (package id) as two deliveries"]);
        Assert.Equal(1, figures.Duplicated["drone utilization stored twice"]);
        Assert.Equal(3, figures.DuplicatedTotal);
        Assert.False(ChaosVerdicts.Verdicts(figures, Faults)[1].Passed);
    }

    [Fact]
    public void The_faults_verdict_fails_when_no_replica_was_killed_or_a_fault_kind_did_not_run()
    {
        var figures = ChaosVerdicts.Figures(Stores(["d1"]), new IngestionCounts(1, 0), Faults, LoadStart, LoadStart.AddSeconds(200));
        bool FaultsRan(IReadOnlyList<FaultRecord> faults) => ChaosVerdicts.Verdicts(figures, faults).Single(v => v.Check == "every fault ran").Passed;

        Assert.True(FaultsRan(Faults));
        Assert.False(FaultsRan([.. Faults.Select(f => f with { ReplicasKilled = 0 })]));
        Assert.False(FaultsRan([.. Faults.Where(f => f.Kind != FaultKind.RestartRedis)]));
    }

    [Fact]
    public void Recovery_is_the_time_from_the_faults_end_until_five_seconds_reach_80_percent_of_the_pre_fault_rate()
    {
        // 10 completions/s until 40 s, none from 40 s to 50 s, 4/s until 53 s, then 10/s again.
        var completions = new List<DateTimeOffset>();
        for (var second = 0; second < 100; second++)
        {
            var perSecond = second < 40 ? 10 : second < 50 ? 0 : second < 53 ? 4 : 10;
            completions.AddRange(Enumerable.Range(0, perSecond).Select(i => LoadStart.AddSeconds(second + (i / 10.0))));
        }

        FaultRecord[] faults = [new(FaultKind.CosmosErrors, TimeSpan.FromSeconds(40), TimeSpan.FromSeconds(48), "x", 0)];

        Assert.Equal(10, ChaosVerdicts.PreFaultRate(completions, LoadStart, faults), precision: 6);
        // From 48 s, 5-s windows starting at 48, 49, 50 and 51 s hold 12, 22, 32 and 38 completions; at 52 s, 44 ≥ 40.
        Assert.Equal(4, ChaosVerdicts.RecoverySeconds(completions, LoadStart.AddSeconds(48), LoadStart.AddSeconds(100), 10));
        Assert.Null(ChaosVerdicts.RecoverySeconds(completions, LoadStart.AddSeconds(48), LoadStart.AddSeconds(52), 10));
    }

    /// <summary>Whole deliveries: package, assignment, utilization and delivery for each id, completed one a second from 10 s.</summary>
    private static StoreContents Stores(string[] ids) => new(
        [.. ids.Select(id => new StoredPackage("p-" + id, id))],
        ids,
        ids,
        [.. ids.Select((id, i) => new StoredDelivery(id, "p-" + id, LoadStart.AddSeconds(10 + i)))],
        []);
}
