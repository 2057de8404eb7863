export function createHarnessActivities(deps: { salutation: string }) {
  return {
    async greet(name: string): Promise<string> {
      return `${deps.salutation}, ${name}`;
    },
  };
}
