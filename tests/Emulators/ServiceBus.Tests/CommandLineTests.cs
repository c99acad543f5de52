namespace DroneDelivery.Emulators.ServiceBus.Tests;

/// <summary>The emulator's flags, read by System.CommandLine: what each sets, and what it refuses by name.</summary>
public sealed class CommandLineTests
{
    [Fact]
    public void Flags_set_the_ports_host_and_latencies()
    {
        var options = CommandLine.Parse(
            ["--port", "5673", "--http-port", "5300", "--https-port", "off", "--host", "0.0.0.0",
             "--send-latency-ms", "3", "--receive-latency-ms", "4", "--complete-latency-ms", "5"]);

        Assert.Equal(5673, options.Port);
        Assert.Equal(5300, options.HttpPort);
        Assert.Null(options.HttpsPort);
        Assert.Equal("0.0.0.0", options.Host);
        Assert.Equal(TimeSpan.FromMilliseconds(3), options.SendLatency);
        Assert.Equal(TimeSpan.FromMilliseconds(4), options.ReceiveLatency);
        Assert.Equal(TimeSpan.FromMilliseconds(5), options.CompleteLatency);
    }

    [Fact]
    public void Flags_not_given_keep_the_defaults()
    {
        var defaults = new ServiceBusEmulatorOptions();

        var options = CommandLine.Parse(["--port", "0"]);

        Assert.Equal(defaults.HttpPort, options.HttpPort);
        Assert.Equal(defaults.HttpsPort, options.HttpsPort);
        Assert.Equal(defaults.Host, options.Host);
    }

    [Theory]
    [InlineData(new[] { "--port", "0", "--http-port", "abc" }, "--http-port must be an integer or off (got 'abc')")]
    [InlineData(new[] { "--port", "0", "--send-latency-ms", "fast" }, "--send-latency-ms must be an integer")]
    [InlineData(new[] { "--port" }, "--port")]
    [InlineData(new[] { "--port", "0", "--bogus", "1" }, "Unknown option '--bogus'")]
    public void Refuses_bad_arguments_by_name(string[] args, string named)
    {
        var error = Assert.Throws<EmulatorConfigurationException>(() => CommandLine.Parse(args));

        Assert.Contains(named, error.Message);
    }

    [Fact]
    public async Task Help_lists_every_flag_and_exits_0()
    {
        var (exitCode, output) = await RunAsync("--help");

        Assert.Equal(0, exitCode);
        Assert.All(
            new[] { "--port", "--http-port", "--https-port", "--config", "--host", "--send-latency-ms", "--receive-latency-ms", "--complete-latency-ms" },
            flag => Assert.Contains(flag, output));
    }

    [Fact]
    public async Task A_bad_argument_exits_2()
    {
        var (exitCode, output) = await RunAsync("--port", "0", "--bogus", "1");

        Assert.Equal(CommandLine.InvalidConfigurationExitCode, exitCode);
        Assert.Contains("Unknown option '--bogus'", output);
    }

    private static async Task<(int ExitCode, string Output)> RunAsync(params string[] args)
    {
        var result = await ProgramRun.RunAsync(ProgramRun.Project("DroneDelivery.Emulators.ServiceBus", args), TimeSpan.FromMinutes(1));
        return (result.ExitCode, result.AllOutput);
    }
}
