namespace DroneDelivery.Emulators.CosmosDb.Tests;

/// <summary>The emulator's flags, read by System.CommandLine: what each sets, and what it refuses by name.</summary>
public sealed class CommandLineTests
{
    [Fact]
    public void Flags_set_the_port_host_and_https()
    {
        var options = CommandLine.Parse(["--port", "9000", "--host", "0.0.0.0", "--https"]);

        Assert.Equal(9000, options.Port);
        Assert.Equal("0.0.0.0", options.Host);
        Assert.True(options.Https);
    }

    [Fact]
    public void Without_a_port_or_config_it_listens_on_the_services_port() =>
        Assert.Equal(8081, CommandLine.Parse([]).Port);

    [Theory]
    [InlineData(new[] { "--port", "65536" }, "--port must be a port number between 0 and 65535 (was '65536')")]
    [InlineData(new[] { "--port", "-1" }, "--port")]
    [InlineData(new[] { "--port" }, "--port")]
    [InlineData(new[] { "--port", "0", "--partitions", "9" }, "Unknown option '--partitions'")]
    [InlineData(new[] { "--host", "everywhere" }, "--host must be an IP address")]
    public void Refuses_bad_arguments_by_name(string[] args, string named)
    {
        var error = Assert.Throws<Configuration.CosmosEmulatorConfigurationException>(() => CommandLine.Parse(args));

        Assert.Contains(named, error.Message);
    }

    [Fact]
    public async Task Help_lists_every_flag_and_exits_0()
    {
        var (exitCode, output) = await RunAsync("--help");

        Assert.Equal(0, exitCode);
        Assert.All(new[] { "--port", "--host", "--config", "--https" }, flag => Assert.Contains(flag, output));
    }

    [Fact]
    public async Task A_bad_argument_exits_2()
    {
        var (exitCode, output) = await RunAsync("--port", "http");

        Assert.Equal(CommandLine.InvalidConfigurationExitCode, exitCode);
        Assert.Contains("--port must be a port number", output);
    }

    private static async Task<(int ExitCode, string Output)> RunAsync(params string[] args)
    {
        var result = await ProgramRun.RunAsync(ProgramRun.Project("DroneDelivery.Emulators.CosmosDb", args), TimeSpan.FromMinutes(1));
        return (result.ExitCode, result.AllOutput);
    }
}
