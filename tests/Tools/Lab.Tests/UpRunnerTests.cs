using DroneDelivery.Security.Tokens;
using DroneDelivery.Lab.Scenarios;

namespace DroneDelivery.Lab.Tests;

/// <summary>What <c>up</c> hands to a load of your own: the addresses, and a key only you can read that mints accepted tokens.</summary>
public sealed class UpRunnerTests
{
    [Fact]
    public void The_signing_key_file_mints_tokens_the_system_accepts_and_only_its_owner_can_read_it()
    {
        var directory = Directory.CreateTempSubdirectory("lab-up-");
        try
        {
            var issuer = DevelopmentIssuer.Generate("dev-issuer", "dev-audience");

            var file = UpRunner.WriteSigningKey(directory.FullName, issuer);

            if (OperatingSystem.IsWindows())
            {
                Assert.Fail("the lab runs on Linux and macOS");
            }
            else
            {
                Assert.Equal(UnixFileMode.UserRead | UnixFileMode.UserWrite, File.GetUnixFileMode(file));
            }
            var minted = DevelopmentIssuer.FromKey(File.ReadAllText(file), issuer.Issuer, issuer.Audience);
            Assert.Equal(issuer.SigningKey, minted.SigningKey);
        }
        finally
        {
            directory.Delete(recursive: true);
        }
    }

    [Fact]
    public void The_description_names_each_public_service_and_the_token_command_with_the_issuer_and_audience()
    {
        var issuer = DevelopmentIssuer.Generate("dev-issuer", "dev-audience");

        var text = UpRunner.Describe("A4", new Dictionary<string, Uri> { ["gateway"] = new("http://127.0.0.1:41001/") }, "/tmp/lab/signing-key", issuer);

        Assert.Contains("gateway    http://127.0.0.1:41001/", text, StringComparison.Ordinal);
        Assert.Contains("issuer dev-issuer, audience dev-audience", text, StringComparison.Ordinal);
        Assert.Contains("token --signing-key-file /tmp/lab/signing-key --operator", text, StringComparison.Ordinal);
    }
}
