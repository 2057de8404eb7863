export const noopActivities = {
  async upload(): Promise<void> {},
  async create(): Promise<void> {},
  async register(): Promise<void> {},
  async confirm(): Promise<void> {},
  async archive(): Promise<void> {},
  async report(): Promise<void> {},
};
